"""PrivacySession: a ledger persisted in an append-only, hash-chained file shared by processes.

Persist and reopen; refusals write nothing; concurrent processes never overspend; a killed or
interrupted process never forgets a release; tampered files are detected; pymc_dp.sample
charges the session and the trace names it.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from filelock import FileLock
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import (
    BudgetExceededError,
    PrivacyEvent,
    PrivacyLedger,
    PrivacySession,
    PrivateConjugateGibbs,
    SessionCorruptedError,
    SessionMismatchError,
)

FAST = {
    "tune": 20,
    "chains": 1,
    "cores": 1,
    "progressbar": False,
    "compute_convergence_checks": False,
}
TOLERANCE = 1e-12  # the ledger's relative slack for floating-point sums of epsilons
REPO = Path(__file__).resolve().parents[1]


def event(epsilon=0.25, delta=0.0, **fields):
    base = {
        "mechanism": "laplace",
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": 1.0,
        "neighbouring": "replace-one",
        "variables": ("y", "p"),
        "noise_backend": "numpy",
        "statistic": "Σy",
    }
    return PrivacyEvent(**{**base, **fields})


def numpy_noise(seed=1):
    return {"noise_backend": "numpy", "noise_rng": np.random.default_rng(seed)}


def bernoulli_model():
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=np.r_[np.ones(30, int), np.zeros(70, int)])
    return model


def run_python(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --- persistence and refusals -----------------------------------------------------------------
def test_remaining_prints_clean_numbers_and_stays_numbers(tmp_path):
    """1 − 0.7 is 0.30000000000000004 in floats: the repr shows 0.3, the value stays exact."""
    session = PrivacySession(tmp_path / "s.ledger", "ds", budget=(1.0, 1e-6))
    session.charge(event(0.7))
    left = session.remaining()
    assert repr(left) == str(left) == "Remaining(epsilon=0.3, delta=1e-06)"
    assert left == (1.0 - 0.7, 1e-6) and left.epsilon == left[0] == 1.0 - 0.7
    epsilon, delta = left
    assert epsilon + 0.7 == 1.0 and delta == 1e-6
    session.charge(event(0.3 - 1e-17, 4e-7))  # spends the budget, up to float error
    assert repr(session.remaining()) == "Remaining(epsilon=0, delta=6e-07)"
    assert repr(PrivacyLedger().remaining()) == "Remaining(epsilon=inf, delta=1)"


def test_session_is_a_ledger_that_persists_and_reopens_with_equal_totals(tmp_path):
    path = tmp_path / "clinic.ledger"
    session = PrivacySession(path, "clinic-2024", budget=(3.0, 1e-6))
    assert isinstance(session, PrivacyLedger) and len(session) == 0
    session.charge(event(0.5))
    session.charge(event(0.25, 1e-7))
    session.charge(event(0.7, partition="region"))
    session.charge(event(0.3, partition="region"))  # parallel: the group costs 0.7

    reopened = PrivacySession(str(path), "clinic-2024", (3.0, 1e-6))
    assert reopened.events == session.events
    assert (reopened.epsilon, reopened.delta) == (session.epsilon, session.delta)
    assert reopened.epsilon == pytest.approx(1.45) and reopened.delta == pytest.approx(1e-7)
    assert reopened.remaining() == pytest.approx((1.55, 9e-7))
    assert reopened.budget == (3.0, 1e-6) and reopened.dataset_id == "clinic-2024"
    assert reopened.session.head == session.session.head

    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["kind"] == "pymc_dp.session" and header["dataset_id"] == "clinic-2024"
    assert header["budget"] == [3.0, 1e-6] and header["schema_version"] == 1
    records = [json.loads(line) for line in lines[1:]]
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert [r["event"]["epsilon"] for r in records] == [0.5, 0.25, 0.7, 0.3]
    assert len({r["hash"] for r in records}) == 4


def test_budget_exceeded_raises_and_leaves_the_file_unchanged(tmp_path):
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", budget=1.0)
    for _ in range(3):
        session.charge(event(0.3))
    before = path.read_bytes()
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        session.charge(event(0.2))
    with pytest.raises(BudgetExceededError, match=r"release of \(epsilon=0\.11, delta=0\)"):
        session.check_all([(0.05, 0.0), (0.06, 0.0)])  # together, not each alone
    with pytest.raises(
        BudgetExceededError, match=r"delta=1e-09\), over the budget \(epsilon=1, delta=0\)"
    ):
        session.charge(event(0.01, delta=1e-9))  # no δ in the budget
    assert path.read_bytes() == before and len(session) == 3
    # a second process's view: the same refusal from the file alone
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.1, delta=0\)"):
        PrivacySession(path, "ds", 1.0).charge(event(0.2))
    assert path.read_bytes() == before
    # checks read the file: an object opened before another's spend still sees it
    stale = PrivacySession(tmp_path / "t.ledger", "ds", 1.0)
    PrivacySession(tmp_path / "t.ledger", "ds", 1.0).charge(event(0.7))
    assert stale.epsilon == 0.0
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.1, delta=0\)"):
        stale.check(0.4)  # 0.7 spent by the other object + 0.4
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.1, delta=0\)"):
        stale.check_all([(0.2, 0.0), (0.2, 0.0)])
    assert stale.epsilon == 0.7
    session.charge(event(0.1))  # exactly at the budget is allowed
    assert PrivacySession(path, "ds", 1.0).remaining()[0] == pytest.approx(0.0, abs=1e-12)


def test_another_dataset_or_budget_is_refused_never_rebudgeted(tmp_path):
    path = tmp_path / "s.ledger"
    PrivacySession(path, "clinic", budget=1.0).charge(event(0.5))
    before = path.read_bytes()
    for dataset_id, budget in [("other", 1.0), ("clinic", 2.0), ("clinic", (1.0, 1e-6))]:
        with pytest.raises(SessionMismatchError, match="never re-budgeted"):
            PrivacySession(path, dataset_id, budget)
    assert PrivacySession(path, "clinic", (1.0, 0.0)).epsilon == 0.5  # the same budget
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="needs a budget"):
        PrivacySession(path, "clinic", None)
    with pytest.raises(ValueError, match="dataset_id"):
        PrivacySession(tmp_path / "t.ledger", "", 1.0)
    with pytest.raises(ValueError, match="budget epsilon"):
        PrivacySession(tmp_path / "t.ledger", "clinic", -1.0)
    with pytest.raises(ValueError, match="does not exist"):
        PrivacySession(tmp_path / "missing" / "t.ledger", "clinic", 1.0)
    assert not (tmp_path / "t.ledger").exists()


# --- concurrency ------------------------------------------------------------------------------
SPENDER = """
    import os, sys, time
    from pymc_dp import BudgetExceededError, PrivacyEvent, PrivacySession

    read = PrivacySession._read

    def slow_read(self):  # a slow disk: without the lock, two writers would read the same tail
        read(self)
        time.sleep(0.005)

    PrivacySession._read = slow_read
    path, go = sys.argv[1], sys.argv[2]
    session = PrivacySession(path, "shared", budget=5.0)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.002)
    spent = refused = 0
    for _ in range(40):  # 40 x 0.25 = 10 per process, 20 in all, against a budget of 5
        try:
            session.charge(PrivacyEvent(
                mechanism="laplace", epsilon=0.25, delta=0.0, sensitivity=1.0,
                neighbouring="replace-one", variables=("y",), noise_backend="numpy",
                statistic=f"pid {os.getpid()}",
            ))
            spent += 1
        except BudgetExceededError:
            refused += 1
        time.sleep(0.01)
    print(spent, refused, flush=True)
"""


@pytest.mark.integration
def test_two_processes_spending_concurrently_never_overspend(tmp_path):
    path, go = tmp_path / "shared.ledger", tmp_path / "go"
    workers = [run_python(SPENDER, str(path), str(go)) for _ in range(2)]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
        go.touch()
        results = [worker.communicate(timeout=240) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, (_, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err
    counts = [tuple(map(int, out.split())) for out, _ in results]
    session = PrivacySession(path, "shared", 5.0)  # verifies the whole chain
    assert session.epsilon <= 5.0 * (1 + TOLERANCE)
    assert len(session) == sum(spent for spent, _ in counts) == 20
    assert all(spent + refused == 40 for spent, refused in counts)
    writers = {e.statistic for e in session.events}
    assert len(writers) == 2, "both processes charged the file (they ran concurrently)"


def test_a_hold_makes_several_charges_all_or_nothing_against_other_writers(tmp_path):
    path = tmp_path / "s.ledger"
    run = PrivacySession(path, "ds", budget=1.0)
    other = PrivacySession(path, "ds", budget=1.0)
    checked, outcome = threading.Event(), {}

    def other_writer():
        checked.wait()
        try:
            other.charge(event(0.4))
            outcome["other"] = "charged"
        except BudgetExceededError:
            outcome["other"] = "refused"
        outcome["other_done"] = time.monotonic()

    thread = threading.Thread(target=other_writer)
    thread.start()
    with run.hold():
        run.check_all([(0.4, 0.0), (0.4, 0.0)])
        checked.set()
        time.sleep(0.3)  # the other writer tries now, and must wait
        run.charge(event(0.4))
        run.charge(event(0.4))
        released = time.monotonic()
    thread.join(10)
    assert outcome["other"] == "refused" and outcome["other_done"] >= released
    assert [e.epsilon for e in PrivacySession(path, "ds", 1.0).events] == [0.4, 0.4]


def test_lock_timeout_charges_nothing(tmp_path):
    path = tmp_path / "s.ledger"
    impatient = PrivacySession(path, "ds", 1.0, timeout=0.1)
    before = path.read_bytes()
    holder = FileLock(f"{path}.lock")  # another holder of the lock (its own descriptor)
    ready, done = threading.Event(), threading.Event()

    def hold():
        with holder:
            ready.set()
            done.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    ready.wait(10)
    try:
        with pytest.raises(TimeoutError, match="nothing was charged"):
            impatient.charge(event(0.1))
    finally:
        done.set()
        thread.join(10)
    assert path.read_bytes() == before
    impatient.charge(event(0.1))


# --- interruption -----------------------------------------------------------------------------
KILLED_AFTER_RELEASE = """
    import os, signal, sys
    import numpy as np, pymc as pm, pymc_dp

    class DiesWhileDrawingTheNoise(np.random.Generator):
        def laplace(self, *args, **kwargs):
            print("charged, drawing", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    session = pymc_dp.PrivacySession(sys.argv[1], "clinic", budget=1.0)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.r_[np.ones(30, int), np.zeros(70, int)])
        pymc_dp.sample(
            20, epsilon=0.4, session=session, noise_backend="numpy",
            noise_rng=DiesWhileDrawingTheNoise(np.random.PCG64(1)),
            tune=10, chains=1, cores=1, progressbar=False,
        )
    print("survived", flush=True)
"""


def test_a_process_killed_while_drawing_the_noise_has_its_event_in_the_file(tmp_path):
    path = tmp_path / "clinic.ledger"
    worker = run_python(KILLED_AFTER_RELEASE, str(path))
    out, err = worker.communicate(timeout=240)
    assert worker.returncode == -signal.SIGKILL, err
    assert out.splitlines() == ["charged, drawing"]
    [persisted] = PrivacySession(path, "clinic", 1.0).events
    assert persisted.epsilon == 0.4 and persisted.mechanism == "laplace"
    assert persisted.variables == ("y", "p") and persisted.noise_backend == "numpy"


def test_the_event_is_fsynced_before_the_noise_and_survives_keyboard_interrupt(
    tmp_path, monkeypatch
):
    path = tmp_path / "clinic.ledger"
    session = PrivacySession(path, "clinic", budget=1.0)
    calls = []
    real_fsync = os.fsync

    def fsync(fd):
        calls.append(("fsync", os.path.realpath(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    class InterruptedWhileDrawing(np.random.Generator):
        def laplace(self, *args, **kwargs):
            calls.append(("draw", len(path.read_text().splitlines())))
            raise KeyboardInterrupt("interrupted while drawing the noise")

    monkeypatch.setattr(os, "fsync", fsync)
    with bernoulli_model(), pytest.raises(KeyboardInterrupt, match="while drawing the noise"):
        pymc_dp.sample(
            20,
            epsilon=0.4,
            session=session,
            noise_backend="numpy",
            noise_rng=InterruptedWhileDrawing(np.random.PCG64(0)),
            **FAST,
        )
    assert calls == [("fsync", str(path.resolve())), ("draw", 2)]  # header + the event
    [persisted] = PrivacySession(path, "clinic", 1.0).events
    assert persisted.epsilon == 0.4


def test_an_interrupted_write_is_rolled_back_and_counts_as_not_charged(tmp_path, monkeypatch):
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", 1.0)
    session.charge(event(0.5))
    before = path.read_bytes()

    def interrupted(fd):
        raise KeyboardInterrupt("interrupted in fsync")

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted in fsync"):
        session.charge(event(0.25))
    monkeypatch.undo()
    assert path.read_bytes() == before and len(session) == 1
    session.charge(event(0.25))
    assert PrivacySession(path, "ds", 1.0).epsilon == 0.75


# --- tampering --------------------------------------------------------------------------------
def _edit_epsilon(lines):
    lines[2] = lines[2].replace('"epsilon":0.25', '"epsilon":0.025')
    return lines


def _delete_line(lines):
    del lines[2]
    return lines


def _delete_header(lines):
    return lines[1:]


def _reorder(lines):
    lines[1], lines[2] = lines[2], lines[1]
    return lines


def _edit_dataset_id(lines):
    lines[0] = lines[0].replace('"dataset_id":"clinic"', '"dataset_id":"kiosk"')
    return lines


def _edit_budget(lines):
    lines[0] = lines[0].replace('"budget":[1.0,0.0]', '"budget":[9.0,0.0]')
    return lines


def _insert_copy(lines):
    return [*lines[:3], lines[2], *lines[3:]]


TAMPERINGS = {
    "edited epsilon": (_edit_epsilon, "line 3: its hash does not match"),
    "deleted line": (_delete_line, "line 3: its hash does not match"),
    "deleted header": (_delete_header, "line 1: its hash does not match"),
    "reordered lines": (_reorder, "line 2: its hash does not match"),
    "edited dataset_id": (_edit_dataset_id, "line 1: its hash does not match"),
    "edited budget": (_edit_budget, "line 1: its hash does not match"),
    "duplicated line": (_insert_copy, "line 4: its hash does not match"),
}


def _spent_session(path):
    session = PrivacySession(path, "clinic", budget=1.0)
    for epsilon in (0.1, 0.25, 0.2):
        session.charge(event(epsilon))
    return session


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_tampered_files_are_detected_on_open_and_on_charge(tmp_path, tampering):
    path = tmp_path / "clinic.ledger"
    session = _spent_session(path)
    edit, message = TAMPERINGS[tampering]
    lines = path.read_text().splitlines()
    tampered = "\n".join(edit(list(lines))) + "\n"
    assert tampered != path.read_text()
    path.write_text(tampered)
    with pytest.raises(SessionCorruptedError, match=message):
        PrivacySession(path, "clinic", 1.0)
    with pytest.raises(SessionCorruptedError, match="nothing was charged or released"):
        session.charge(event(0.01))
    with pytest.raises(SessionCorruptedError, match=r"line \d+: .*nothing was charged or released"):
        session.check(0.01)
    assert path.read_text() == tampered  # nothing appended


def test_a_truncated_last_line_is_detected(tmp_path):
    path = tmp_path / "clinic.ledger"
    session = _spent_session(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    with pytest.raises(SessionCorruptedError, match="line 4: the last line is cut"):
        PrivacySession(path, "clinic", 1.0)
    with pytest.raises(SessionCorruptedError, match="cut"):
        session.charge(event(0.01))
    # what the message advises after an interrupted charge: drop the partial line
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])
    assert [e.epsilon for e in PrivacySession(path, "clinic", 1.0).events] == [0.1, 0.25]


def test_removed_last_lines_are_detected_by_an_open_session_and_by_a_traces_record(tmp_path):
    path = tmp_path / "clinic.ledger"
    session = _spent_session(path)
    spend = session.session  # what a trace charged to the session records
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))  # a valid prefix: the chain alone cannot tell
    with pytest.raises(SessionCorruptedError, match="fewer than the 4 this session already read"):
        session.charge(event(0.01))
    fresh = PrivacySession(path, "clinic", 1.0)
    with pytest.raises(SessionCorruptedError, match="no longer holds the history"):
        fresh.verify(spend)
    path.write_text("".join(lines))
    assert fresh.verify(spend) is fresh and len(fresh) == 3


def test_a_foreign_or_empty_file_is_not_a_session(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    with pytest.raises(SessionCorruptedError, match="hash"):
        PrivacySession(path, "clinic", 1.0)
    path.write_text("")
    with pytest.raises(SessionCorruptedError, match="empty"):
        PrivacySession(path, "clinic", 1.0)


# --- pymc_dp.sample ---------------------------------------------------------------------------
def test_sample_charges_the_session_and_the_trace_names_it(tmp_path):
    path = tmp_path / "survey.ledger"
    session = PrivacySession(path, "survey-2024", budget=1.0)
    with bernoulli_model():
        idata = pymc_dp.sample(50, epsilon=0.6, session=session, **numpy_noise(1), **FAST)
    [charged] = PrivacySession(path, "survey-2024", 1.0).events
    assert charged.epsilon == 0.6 and charged.variables == ("y", "p")

    ledger = PrivacyLedger.from_datatree(idata)
    assert ledger.events == (charged,) and ledger.budget == (1.0, 0.0)
    assert ledger.session.path == str(path.resolve()) and ledger.session.dataset_id == "survey-2024"
    assert (ledger.session.epsilon, ledger.session.n_events) == (0.6, 1)
    attrs = idata["privacy_ledger"].attrs
    assert attrs["session_path"] == str(path.resolve()) and attrs["session_epsilon"] == 0.6
    assert attrs["session_events"] == 1 and attrs["session_dataset_id"] == "survey-2024"
    json.dumps(dict(attrs))  # JSON-serialisable as they are
    assert json.loads(idata.attrs["pymc_dp_ledger"])["session"]["head"] == session.session.head
    session.verify(ledger.session)

    before = path.read_bytes()
    with bernoulli_model():
        with pytest.raises(BudgetExceededError, match="nothing was released"):
            pymc_dp.sample(50, epsilon=0.5, session=session, **numpy_noise(2), **FAST)
        assert path.read_bytes() == before
        # another process spends meanwhile: the next trace lists only its own run's events
        PrivacySession(path, "survey-2024", 1.0).charge(event(0.1))
        idata = pymc_dp.sample(50, epsilon=0.3, session=session, **numpy_noise(3), **FAST)
    ledger = PrivacyLedger.from_datatree(idata)
    assert [e.epsilon for e in ledger.events] == [0.3] and ledger.epsilon == 0.3
    assert ledger.session.epsilon == pytest.approx(1.0) and ledger.session.n_events == 3
    trace_path = tmp_path / "trace.nc"
    idata.to_netcdf(trace_path, engine="h5netcdf")
    loaded = PrivacyLedger.from_datatree(xr.open_datatree(trace_path, engine="h5netcdf"))
    assert loaded.session == ledger.session and loaded.events == ledger.events
    assert PrivacySession(path, "survey-2024", 1.0).epsilon == pytest.approx(1.0)
    # a ledger rebuilt from that trace is in memory: a run charged to it names no session
    with bernoulli_model():
        plain = pymc_dp.sample(20, epsilon=0.1, ledger=loaded, **numpy_noise(4), **FAST)
    assert PrivacyLedger.from_datatree(plain).session is None
    assert "session_path" not in plain["privacy_ledger"].attrs


def test_sample_takes_a_session_exclusively(tmp_path):
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", budget=1.0)
    before = path.read_bytes()
    with bernoulli_model():
        for extra in ({"budget": 1.0}, {"ledger": PrivacyLedger()}):
            with pytest.raises(ValueError, match="not several"):
                pymc_dp.sample(20, epsilon=0.5, session=session, **extra, **FAST)
        with pytest.raises(TypeError, match="PrivacySession"):
            pymc_dp.sample(20, epsilon=0.5, session=PrivacyLedger(budget=1.0), **FAST)
    assert path.read_bytes() == before


def test_a_session_works_wherever_a_ledger_does_with_cores_and_prebuilt_steps(tmp_path):
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", budget=1.0)
    model = bernoulli_model()
    with model:
        step = PrivateConjugateGibbs([model["p"]], epsilon=0.3, ledger=session, **numpy_noise())
        assert len(PrivacySession(path, "ds", 1.0)) == 1  # charged at construction
        idata = pymc_dp.sample(40, step=step, ledger=session, **{**FAST, "chains": 2, "cores": 2})
    assert [e.epsilon for e in PrivacyLedger.from_datatree(idata).events] == [0.3]
    assert len(PrivacySession(path, "ds", 1.0)) == 1  # the step's release is not charged twice
    assert idata.posterior.sizes["chain"] == 2
    # the lock is free after a run that forked workers while holding it
    probe = FileLock(f"{path}.lock")
    probe.acquire(timeout=0)
    probe.release()


def test_a_session_pickles_without_its_lock_and_rereads_the_file(tmp_path):
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", budget=1.0)
    session.charge(event(0.25))
    with session.hold():
        copy = pickle.loads(pickle.dumps(session))
    assert copy.events == session.events and copy.budget == session.budget
    session.charge(event(0.25))
    assert len(copy) == 1 and len(copy.verify()) == 2  # reads the file on demand
    copy.charge(event(0.25))
    assert PrivacySession(path, "ds", 1.0).epsilon == 0.75


# --- property ---------------------------------------------------------------------------------
REQUESTS = st.lists(
    st.tuples(
        st.sampled_from(["charge", "check_all"]),
        st.floats(1e-3, 1.5, allow_nan=False),
        st.sampled_from([0.0, 0.0, 1e-7, 5e-7]),
        st.sampled_from(["", "", "a", "b"]),
    ),
    min_size=1,
    max_size=15,
)


@settings(max_examples=40, deadline=None)
@given(
    budget=st.tuples(st.floats(0.1, 3.0), st.sampled_from([0.0, 1e-6])),
    requests=REQUESTS,
)
def test_no_sequence_of_charges_leaves_the_persisted_total_above_the_budget(budget, requests):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.ledger"
        session = PrivacySession(path, "ds", budget)
        accepted = []
        for kind, epsilon, delta, partition in requests:
            before = path.read_bytes()
            try:
                if kind == "charge":
                    accepted.append(session.charge(event(epsilon, delta, partition=partition)))
                else:
                    session.check_all([(epsilon, delta), (epsilon / 2, 0.0)])
            except BudgetExceededError:
                assert path.read_bytes() == before
            if kind == "check_all":
                assert path.read_bytes() == before  # a check records nothing
            persisted = PrivacySession(path, "ds", budget)
            assert persisted.epsilon <= budget[0] * (1 + TOLERANCE)
            assert persisted.delta <= budget[1] + TOLERANCE
            assert persisted.events == tuple(accepted)
        if not accepted:
            assert math.isclose(PrivacySession(path, "ds", budget).epsilon, 0.0)
