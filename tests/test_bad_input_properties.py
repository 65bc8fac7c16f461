"""Property: arbitrary bad inputs to ``pymc_dp.sample`` raise a clear error and spend nothing.

For every generated bad input (a bad option value, an unknown keyword, a record outside the
domain) on the Laplace and the posterior-sampling routes, ``pymc_dp.sample`` must raise an
error whose message names the offending option or variable, and both the ``ledger=`` passed
in and a :class:`~pymc_dp.PrivacySession` file passed as ``session=`` must be untouched: no
event, no spend, not one byte more in the file.

The naive-Bayes HMM is reached through its own entry points (records coded as integers,
a DataFrame of labels, a count tensor, then :func:`pymc_dp.models.naive_bayes_hmm` and
``pymc_dp.sample``): for every bad record, label, tensor or option the error must also give
counts and never a value, the noise generator must not be drawn from, and ``pm.sample`` must
never run.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import InvalidPrivateDataError, PrivacyLedger, PrivacySession
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.hmm import CellCounts, cell_counts, cell_counts_from_frame, release_cell_counts
from pymc_dp.models import naive_bayes_hmm

GOOD = [1, 0, 1, 1, 0]
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _model(mechanism, data=GOOD):
    with pm.Model() as model:
        if mechanism == "laplace":
            rate = pm.Beta("rate", 1.0, 1.0)
        else:
            rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=np.asarray(data, dtype=float))
    return model


bad_epsilon = st.one_of(
    st.floats(max_value=0.0),
    st.sampled_from([math.nan, math.inf, -math.inf]),
).map(lambda e: ({"epsilon": e}, "epsilon"))
bad_delta = st.one_of(
    st.floats(max_value=-1e-12, allow_nan=False),
    st.floats(min_value=1.0),
    st.just(math.nan),
).map(lambda d: ({"epsilon": 1.0, "delta": d}, "delta"))
bad_keyword = st.from_regex(r"\A[a-z]{3,12}_zz\Z").map(
    lambda name: ({"epsilon": 1.0, name: 1}, name)
)
bad_choice = st.sampled_from(["noise_backend", "neighbouring", "mechanism"]).flatmap(
    lambda option: st.text("abcxyz-", min_size=1, max_size=8).map(
        lambda value: ({"epsilon": 1.0, option: value}, option)
    )
)
bad_count = st.sampled_from(["chains", "tune"]).flatmap(
    lambda option: st.integers(max_value=-1).map(
        lambda value: ({"epsilon": 1.0, option: value}, option)
    )
)
bad_options = st.one_of(bad_epsilon, bad_delta, bad_keyword, bad_choice, bad_count)
bad_record = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(min_value=2, max_value=10**6).map(float),
    st.integers(max_value=-1, min_value=-(10**6)).map(float),
)


@SETTINGS
@given(
    mechanism=st.sampled_from(["laplace", "ops", "gibbs-exponential"]),
    bad=bad_options,
)
def test_bad_options_raise_and_charge_nothing(tmp_path_factory, mechanism, bad):
    options, name = bad
    options = {"mechanism": mechanism, **options}
    ledger = PrivacyLedger(budget=(5.0, 1e-6))
    path = tmp_path_factory.mktemp("session") / "budget.jsonl"
    session = PrivacySession(path, "bad-input", budget=(5.0, 1e-6))
    size = path.stat().st_size if path.exists() else 0
    for target in ({"ledger": ledger}, {"session": session}):
        with pytest.raises((ValueError, TypeError), match=name):
            pymc_dp.sample(5, model=_model(mechanism), progressbar=False, **target, **options)
    assert ledger.events == () and len(session.events) == 0
    assert (path.stat().st_size if path.exists() else 0) == size


@SETTINGS
@given(
    mechanism=st.sampled_from(["laplace", "ops", "gibbs-exponential"]),
    record=bad_record,
    position=st.integers(0, len(GOOD) - 1),
)
def test_bad_records_raise_and_charge_nothing(tmp_path_factory, mechanism, record, position):
    data = list(GOOD)
    data[position] = record
    ledger = PrivacyLedger(budget=(5.0, 1e-6))
    path = tmp_path_factory.mktemp("session") / "budget.jsonl"
    session = PrivacySession(path, "bad-input", budget=(5.0, 1e-6))
    size = path.stat().st_size if path.exists() else 0
    for target in ({"ledger": ledger}, {"session": session}):
        with pytest.raises(InvalidPrivateDataError, match=r"\by\b"):
            pymc_dp.sample(
                5,
                model=_model(mechanism, data),
                epsilon=1.0,
                mechanism=mechanism,
                progressbar=False,
                **target,
            )
    assert ledger.events == () and len(session.events) == 0
    assert (path.stat().st_size if path.exists() else 0) == size


# --- the naive-Bayes HMM ------------------------------------------------------------------------
# A user counts records into cells (cell_counts, cell_counts_from_frame or a CellCounts tensor),
# builds naive_bayes_hmm on them and calls pymc_dp.sample. Whatever the bad input, the error must
# name the variable, give counts (never a value), and nothing may be charged, drawn or sampled.

HMM_GRID = {"regions": ["a", "b"], "times": ["t0", "t1", "t2"], "features": ["x", "y"]}
HMM_CATEGORIES = [["p", "q"], ["u", "v", "w"]]
HMM_REGION = np.array([0, 1, 1, 0, 1, 0, 1, 1])
HMM_TIME = np.array([0, 2, 1, 1, 0, 2, 2, 1])
HMM_RECORDS = np.array([[0, 1], [1, 2], [0, 0], [1, 1], [0, 2], [1, 0], [0, 1], [1, 2]])
HMM_CODES = {  # variable -> (message label, noun, number of declared codes)
    "region": ("region", "code", 2),
    "time": ("time", "code", 3),
    "x": ("feature 'x'", "category", 2),
    "y": ("feature 'y'", "category", 3),
}
HMM_MECHANISMS = ["laplace", "ops", "gibbs-exponential"]
HMM_SETTINGS = settings(  # pymc_dp.sample analyses the model first (~0.5 s a call)
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class PrivateDataSampled(AssertionError):
    """pm.sample ran on private data after a bad input."""


@functools.wraps(pm.sample)  # keeps pm.sample's signature: pymc_dp.sample checks options by it
def _refuse_sampling(*args, **kwargs):
    raise PrivateDataSampled("pm.sample ran on private data after a bad input")


def _hmm_sample(model, mechanism, target, rng, **options):
    return pymc_dp.sample(
        3,
        model=model,
        mechanism=mechanism,
        progressbar=False,
        **{"epsilon": 1.0, "noise_backend": "numpy", "noise_rng": rng, **options},
        **target,
    )


def _assert_hmm_refusal(tmp_path_factory, run, error, pattern, secrets=()):
    """``run(target, rng)`` raises ``error`` matching ``pattern`` for a ledger and for a session;
    the message holds none of ``secrets``; no event, no byte, no RNG draw."""
    ledger = PrivacyLedger(budget=(5.0, 1e-6))
    path = tmp_path_factory.mktemp("session") / "budget.jsonl"
    session = PrivacySession(path, "bad-hmm-input", budget=(5.0, 1e-6))
    size = path.stat().st_size
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for target in ({"ledger": ledger}, {"session": session}):
        with pytest.raises(error, match=pattern) as refused:
            run(target, rng)
        message = str(refused.value)
        assert not [s for s in secrets if s in message], message  # counts, never values
    assert ledger.events == () and len(session.events) == 0
    assert path.stat().st_size == size
    assert rng.bit_generator.state == state  # no noise drawn, no sampler seeded


def _records_pipeline(region, time, records, mechanism, grid=None):
    """Count → model → pymc_dp.sample, as a user of the HMM writes it."""
    grid = {**HMM_GRID, "categories": HMM_CATEGORIES, **(grid or {})}

    def run(target, rng):
        counts = cell_counts(region, time, records, **grid)
        return _hmm_sample(naive_bayes_hmm(counts, 2, truncation=10), mechanism, target, rng)

    return run


def _record_columns():
    return {"region": HMM_REGION.copy(), "time": HMM_TIME.copy(), "records": HMM_RECORDS.copy()}


def _plural(count, one, many):
    return one if count == 1 else many


@st.composite
def hmm_bad_codes(draw):
    """Codes outside the declared grid or a feature's categories (too large or negative)."""
    variable = draw(st.sampled_from(sorted(HMM_CODES)))
    label, noun, size = HMM_CODES[variable]
    rows = draw(st.sets(st.integers(0, len(HMM_REGION) - 1), min_size=1))
    values = draw(
        st.lists(
            st.one_of(
                st.integers(size, size + 3),
                st.integers(100, 10**6),
                st.integers(-(10**6), -1),
            ),
            min_size=len(rows),
            max_size=len(rows),
        )
    )
    columns = _record_columns()
    for row, value in zip(sorted(rows), values, strict=True):
        if variable in ("x", "y"):
            columns["records"][row, ["x", "y"].index(variable)] = value
        else:
            columns[variable][row] = value
    k = len(rows)
    pattern = (
        rf"^{re.escape(label)}: {k} {_plural(k, 'record has', 'records have')} a {noun} "
        rf"outside the declared domain \(codes 0\.\.{size - 1}\)"
    )
    secrets = [str(v) for v in values if abs(v) >= 100]
    return columns, {}, InvalidPrivateDataError, pattern, secrets


@st.composite
def hmm_non_integer_codes(draw):
    """Float codes (fractional, NaN, ±inf or whole), booleans or strings instead of integers."""
    variable = draw(st.sampled_from(["region", "time", "records"]))
    columns = _record_columns()
    kind = draw(st.sampled_from(["float", "bool", "str"]))
    secrets = []
    if kind == "float":
        codes = columns[variable].astype(float)
        injected = draw(
            st.one_of(
                st.sampled_from([math.nan, math.inf, -math.inf]),
                st.integers(100, 10**6).map(lambda v: v + 0.5),
                st.just(None),  # whole numbers stored as floats
            )
        )
        if injected is not None:
            codes.flat[draw(st.integers(0, codes.size - 1))] = injected
            if math.isfinite(injected):
                secrets.append(str(int(injected)))
        columns[variable] = codes
    else:
        columns[variable] = columns[variable].astype(kind)
    dtype = re.escape(str(columns[variable].dtype))
    pattern = rf"^{variable} codes must be integers, got {dtype}"
    return columns, {}, InvalidPrivateDataError, pattern, secrets


@st.composite
def hmm_bad_shapes(draw):
    """Records of the wrong shape, or region / time / records of different lengths."""
    columns = _record_columns()
    kind = draw(st.sampled_from(["records-shape", "length", "region-2d"]))
    if kind == "records-shape":
        records = columns["records"]
        columns["records"] = draw(
            st.sampled_from(
                [records[:, 0], np.column_stack([records, records[:, :1]]), records[:, :, None]]
            )
        )
        shape = re.escape(str(columns["records"].shape))
        return columns, {}, ValueError, rf"^records must have shape \(N, 2\), got {shape}", []
    if kind == "length":
        variable = draw(st.sampled_from(["region", "time", "records"]))
        dropped = draw(st.integers(1, len(HMM_REGION)))
        columns[variable] = columns[variable][dropped:]
    else:
        columns["region"] = columns["region"][None, :]
    return columns, {}, ValueError, r"^region, time and records must describe the same N", []


@st.composite
def hmm_empty_groups(draw):
    """An empty grid (no region or no time step) or a feature with no categories."""
    columns = _record_columns()
    group = draw(st.sampled_from(["regions", "times", "categories"]))
    grid = {"categories": [HMM_CATEGORIES[0], []]} if group == "categories" else {group: []}
    if draw(st.booleans()):  # no records at all
        columns = {name: column[:0] for name, column in columns.items()}
        if group != "categories":  # an empty grid
            pattern = r"the grid needs at least one region and one time step"
            return columns, grid, ValueError, pattern, []
    if group == "categories":  # a public declaration, refused before the records are read
        return columns, grid, ValueError, r"^feature 'y' has no categories", []
    n = len(HMM_REGION)
    label = {"regions": "region", "times": "time"}[group]
    pattern = (
        rf"^{label}: {n} records have a code outside the declared domain "
        r"\(none is declared: the grid is empty\)"
    )
    return columns, grid, InvalidPrivateDataError, pattern, []


@SETTINGS
@given(
    mechanism=st.sampled_from(HMM_MECHANISMS),
    bad=st.one_of(hmm_bad_codes(), hmm_non_integer_codes(), hmm_bad_shapes(), hmm_empty_groups()),
)
def test_hmm_bad_records_raise_and_charge_nothing(tmp_path_factory, monkeypatch, mechanism, bad):
    columns, grid, error, pattern, secrets = bad
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    run = _records_pipeline(columns["region"], columns["time"], columns["records"], mechanism, grid)
    _assert_hmm_refusal(tmp_path_factory, run, error, pattern, secrets)


HMM_FRAME_COLUMNS = {  # column -> message label
    "where": "region column 'where'",
    "when": "time column 'when'",
    "x": "feature 'x'",
    "y": "feature 'y'",
}


def _hmm_frame():
    return pd.DataFrame(
        {
            "where": np.array(HMM_GRID["regions"])[HMM_REGION],
            "when": np.array(HMM_GRID["times"])[HMM_TIME],
            "x": np.array(HMM_CATEGORIES[0])[HMM_RECORDS[:, 0]],
            "y": np.array(HMM_CATEGORIES[1])[HMM_RECORDS[:, 1]],
        },
        dtype=object,
    )


@SETTINGS
@given(
    mechanism=st.sampled_from(HMM_MECHANISMS),
    column=st.sampled_from(sorted(HMM_FRAME_COLUMNS)),
    rows=st.sets(st.integers(0, len(HMM_REGION) - 1), min_size=1),
    bad=st.one_of(
        st.sampled_from([None, math.nan, pd.NA]).map(lambda v: ("missing", v)),
        st.text("abcdefghij", min_size=1, max_size=6).map(lambda s: ("unknown", f"SECRET_{s}")),
        st.integers(10**4, 10**6).map(lambda v: ("unknown", v)),
    ),
)
def test_hmm_bad_frame_labels_raise_and_charge_nothing(
    tmp_path_factory, monkeypatch, mechanism, column, rows, bad
):
    kind, value = bad
    frame = _hmm_frame()
    frame.loc[sorted(rows), column] = value
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)

    def run(target, rng):
        counts = cell_counts_from_frame(
            frame,
            region="where",
            time="when",
            features=["x", "y"],
            regions=HMM_GRID["regions"],
            times=HMM_GRID["times"],
            categories=dict(zip(HMM_GRID["features"], HMM_CATEGORIES, strict=True)),
        )
        return _hmm_sample(naive_bayes_hmm(counts, 2, truncation=10), mechanism, target, rng)

    what = re.escape(HMM_FRAME_COLUMNS[column])
    k = len(rows)
    if kind == "missing":
        pattern = rf"^{what} has {k} missing values"
    else:
        pattern = rf"^{what} has {k} values outside its declared domain"
    secrets = [] if kind == "missing" else [str(value)]
    _assert_hmm_refusal(tmp_path_factory, run, InvalidPrivateDataError, pattern, secrets)


def _hmm_counts():
    return cell_counts(HMM_REGION, HMM_TIME, HMM_RECORDS, categories=HMM_CATEGORIES, **HMM_GRID)


@st.composite
def hmm_bad_tensor(draw):
    """A (2, 3, 2, 3) count tensor broken at k entries: NaN/±inf, negative, fractional, non-zero
    at a padded category, or features counting different numbers of records in k cells.

    Returns (tensor, pattern, secrets); an inconsistent tensor is reported by feature name."""
    tensor = _hmm_counts().counts.copy()
    cells = [(r, t) for r in range(2) for t in range(3)]
    kind = draw(st.sampled_from(["nonfinite", "negative", "fractional", "padded", "inconsistent"]))
    declared = [(r, t, d, j) for r, t in cells for d, k in enumerate((2, 3)) for j in range(k)]
    if kind in ("padded", "inconsistent"):
        where = draw(st.lists(st.sampled_from(cells), min_size=1, unique=True))
        values = draw(st.lists(st.integers(100, 10**6), min_size=len(where), max_size=len(where)))
        k = len(where)
        for (r, t), value in zip(where, values, strict=True):
            if kind == "padded":
                tensor[r, t, 0, 2] = value  # feature x has 2 categories: j = 2 is padding
            else:
                tensor[r, t, 1, draw(st.integers(0, 2))] += value  # y counts more records
        if kind == "padded":
            pattern = rf"^counts are non-zero at a category outside its feature in {k} entries"
        else:
            pattern = (
                rf"^raw counts are inconsistent across features: in {k} "
                rf"{_plural(k, 'cell', 'cells')}, feature 'y' count a different number of records"
            )
        return tensor, pattern, [str(v) for v in values]
    where = draw(st.lists(st.sampled_from(declared), min_size=1, unique=True))
    k = len(where)
    if kind == "nonfinite":
        values = draw(
            st.lists(st.sampled_from([math.nan, math.inf, -math.inf]), min_size=k, max_size=k)
        )
        pattern = rf"^counts contain {k} NaN or infinite entries"
    elif kind == "negative":
        values = draw(st.lists(st.integers(-(10**6), -100), min_size=k, max_size=k))
        pattern = rf"^counts contain {k} negative entries"
    else:
        values = draw(st.lists(st.integers(100, 10**6), min_size=k, max_size=k))
        values = [v + 0.5 for v in values]
        pattern = rf"^raw counts contain {k} non-integer entries"
    for index, value in zip(where, values, strict=True):
        tensor[index] = value
    secrets = [str(int(v)) for v in values if math.isfinite(v)]
    return tensor, pattern, secrets


@st.composite
def hmm_misshapen_tensor(draw):
    tensor = _hmm_counts().counts
    tensor = draw(
        st.sampled_from(
            [tensor[:1], tensor[:, :2], tensor[..., :2], tensor[0], tensor[None], tensor.ravel()]
        )
    )
    shape = re.escape(str(tensor.shape))
    return tensor, rf"^counts has shape {shape}, the labels give \(2, 3, 2, 3\)", []


@SETTINGS
@given(
    mechanism=st.sampled_from(HMM_MECHANISMS),
    bad=st.one_of(
        hmm_bad_tensor().map(lambda bad: (InvalidPrivateDataError, *bad)),
        hmm_misshapen_tensor().map(lambda bad: (ValueError, *bad)),
    ),
)
def test_hmm_bad_count_tensors_raise_and_charge_nothing(
    tmp_path_factory, monkeypatch, mechanism, bad
):
    error, tensor, pattern, secrets = bad
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)

    def run(target, rng):
        counts = CellCounts(tensor, categories=HMM_CATEGORIES, **HMM_GRID)
        return _hmm_sample(naive_bayes_hmm(counts, 2, truncation=10), mechanism, target, rng)

    _assert_hmm_refusal(tmp_path_factory, run, error, pattern, secrets)


@functools.cache
def _hmm_model():
    """One model for the examples below: each restores its counts (pymc_dp.sample analyses
    the model before it checks the options, the costly step of these examples)."""
    return naive_bayes_hmm(_hmm_counts(), 2, truncation=10)


hmm_bad_choice = st.sampled_from(["hmm_method", "projection", "accounting"]).flatmap(
    lambda option: st.text("abcxyz-", min_size=1, max_size=8).map(
        lambda value: ({option: value}, option)
    )
)
hmm_bad_options = st.one_of(
    bad_epsilon, bad_delta, bad_keyword, bad_choice, bad_count, hmm_bad_choice
).map(lambda bad: (HMM_MECHANISMS, *bad))
hmm_refused_combinations = st.sampled_from(
    [  # (mechanisms, options, pattern)
        (["ops", "gibbs-exponential"], {"neighbouring": "add-remove-one"}, "replace-one"),
        (["ops", "gibbs-exponential"], {"delta": 1e-6}, r"pure ε-DP: delta must be 0"),
        (["ops", "gibbs-exponential"], {"inference": "plugin"}, r"inference"),
        (["laplace"], {"accounting": "tight", "delta": 1e-6}, r"accounting='tight'"),
        (["laplace"], {"inference": "noise-aware", "hmm_method": "collapsed"}, "hmm_method"),
        (HMM_MECHANISMS, {"epsilon": {"x": 1.0}}, r"one total epsilon"),
        (HMM_MECHANISMS, {"noise_rng": 5}, r"noise_rng must be a numpy\.random\.Generator"),
    ]
)


@HMM_SETTINGS
@given(
    bad=st.one_of(hmm_bad_options, hmm_refused_combinations),
    choice=st.integers(0, 2),
)
def test_hmm_bad_options_raise_and_charge_nothing(tmp_path_factory, monkeypatch, bad, choice):
    mechanisms, options, pattern = bad
    mechanism = mechanisms[choice % len(mechanisms)]
    options = {"mechanism": mechanism, **options}
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)

    def run(target, rng):
        return _hmm_sample(_hmm_model(), target=target, rng=rng, **options)

    _assert_hmm_refusal(tmp_path_factory, run, (ValueError, TypeError), pattern)


@HMM_SETTINGS
@given(mechanism=st.sampled_from(HMM_MECHANISMS), bad=hmm_bad_tensor())
def test_hmm_counts_edited_in_place_are_refused_by_every_route(
    tmp_path_factory, monkeypatch, mechanism, bad
):
    """Counts validated when counted, then edited in place: every route re-validates them
    (the Laplace release; OPS and the exponential Gibbs before the budget check)."""
    tensor, pattern, secrets = bad
    counts = _hmm_model().pymc_dp_hmm.counts
    saved = counts.counts.copy()
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    try:
        counts.counts[...] = tensor

        def run(target, rng):
            return _hmm_sample(_hmm_model(), mechanism, target, rng)

        _assert_hmm_refusal(tmp_path_factory, run, InvalidPrivateDataError, pattern, secrets)
    finally:
        counts.counts[...] = saved


hmm_bad_release_options = st.one_of(
    bad_epsilon.map(lambda bad: (bad[0], r"^epsilon must be a finite number > 0")),
    st.sampled_from(["projection", "neighbouring", "backend"]).flatmap(
        lambda option: st.text("abcxyz-", min_size=1, max_size=8).map(
            lambda value: ({option: value}, rf"^{option} must be one of")
        )
    ),
    st.just(({"noisy": True}, r"^these counts are already a private release")),
)


@SETTINGS
@given(
    bad=st.one_of(
        hmm_bad_tensor().map(lambda bad: ({}, bad[0], InvalidPrivateDataError, bad[1], bad[2])),
        hmm_bad_release_options.map(lambda bad: (bad[0], None, ValueError, bad[1], [])),
    )
)
def test_hmm_release_refuses_bad_input_and_charges_nothing(tmp_path_factory, bad):
    """release_cell_counts, the HMM's direct release, on counts edited in place after counting
    or with a bad option."""
    options, tensor, error, pattern, secrets = bad
    options = dict(options)
    counts = _hmm_counts()
    if tensor is not None:
        counts.counts[...] = tensor
    if options.pop("noisy", False):
        counts = counts.with_counts(counts.counts, noisy=True)

    def run(target, rng):
        (ledger,) = target.values()
        options_ = {"epsilon": 1.0, "backend": "numpy", "rng": rng, **options}
        return release_cell_counts(counts, ledger=ledger, **options_)

    _assert_hmm_refusal(tmp_path_factory, run, error, pattern, secrets)


# --- regressions: package bugs this review found, now fixed ---------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "index", "value", "pattern"),
    [
        ("ops", (0, 0, 0, 0), -3.0, r"^counts contain 1 negative entries"),
        ("ops", (0, 0, 0, 0), math.nan, r"^counts contain 1 NaN or infinite entries"),
        ("ops", (0, 0, 1, 0), 0.5, r"^raw counts contain 1 non-integer entries"),
        ("ops", (0, 0, 1, 0), 7.0, r"feature 'y' count a different number of records"),
        ("gibbs-exponential", (0, 0, 0, 0), -3.0, r"^counts contain 1 negative entries"),
        ("gibbs-exponential", (0, 0, 1, 0), 0.5, r"^raw counts contain 1 non-integer entries"),
        ("gibbs-exponential", (0, 0, 1, 0), 7.0, r"feature 'y' count a different number"),
    ],
)
def test_tempered_hmm_routes_refuse_counts_edited_in_place(
    tmp_path_factory, monkeypatch, mechanism, index, value, pattern
):
    """OPS and the exponential Gibbs re-validate counts edited in place after counting, before
    the budget check: nothing sampled, charged or drawn (they used to sample and charge)."""
    counts = _hmm_model().pymc_dp_hmm.counts
    saved = counts.counts.copy()
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    try:
        counts.counts[index] = value

        def run(target, rng):
            return _hmm_sample(_hmm_model(), mechanism, target, rng)

        _assert_hmm_refusal(tmp_path_factory, run, InvalidPrivateDataError, pattern)
    finally:
        counts.counts[...] = saved


@pytest.mark.parametrize("mechanism", HMM_MECHANISMS)
def test_a_feature_without_categories_is_refused_before_the_release(
    tmp_path_factory, monkeypatch, mechanism
):
    """No records and a feature with no categories: refused when counting (the Laplace route
    used to charge the release, then fail in PyTensor)."""
    monkeypatch.setattr(pm, "sample", _refuse_sampling)
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    empty = {name: column[:0] for name, column in _record_columns().items()}
    run = _records_pipeline(
        empty["region"],
        empty["time"],
        empty["records"],
        mechanism,
        {"categories": [HMM_CATEGORIES[0], []]},
    )
    _assert_hmm_refusal(tmp_path_factory, run, ValueError, r"^feature 'y' has no categories")


def test_a_feature_without_categories_is_refused_by_every_constructor():
    categories = [HMM_CATEGORIES[0], []]
    with pytest.raises(ValueError, match=r"^feature 'y' has no categories"):
        CellCounts(np.zeros((2, 3, 2, 2)), categories=categories, **HMM_GRID)
    frame = _hmm_frame().iloc[:0]
    with pytest.raises(ValueError, match=r"^feature 'y' has no categories"):
        cell_counts_from_frame(
            frame,
            region="where",
            time="when",
            features=["x", "y"],
            regions=HMM_GRID["regions"],
            times=HMM_GRID["times"],
            categories=dict(zip(HMM_GRID["features"], categories, strict=True)),
        )


def test_a_model_without_features_is_refused_by_name(tmp_path_factory):
    run = _records_pipeline(
        HMM_REGION, HMM_TIME, HMM_RECORDS[:, :0], "laplace", {"features": [], "categories": []}
    )
    _assert_hmm_refusal(tmp_path_factory, run, ValueError, r"needs? at least one feature")
    grid = {**HMM_GRID, "features": []}
    with pytest.raises(ValueError, match=r"needs? at least one feature"):
        CellCounts(np.zeros((2, 3, 0, 1)), categories=[], **grid)


@pytest.mark.parametrize(
    "tensor",
    [
        np.full((2, 3, 2, 3), "SECRET_label"),
        np.full((2, 3, 2, 3), b"SECRET_label"),
        np.array([*[0.0] * 35, "SECRET_label"], dtype=object).reshape(2, 3, 2, 3),
        np.array([*[0] * 35, "7"], dtype=object).reshape(2, 3, 2, 3),
    ],
    ids=["str", "bytes", "object-str", "object-numeric-str"],
)
def test_a_tensor_of_labels_is_refused_without_quoting_them(tensor):
    with pytest.raises(
        InvalidPrivateDataError, match=r"^counts must be a tensor of numbers"
    ) as refused:
        CellCounts(tensor, categories=HMM_CATEGORIES, **HMM_GRID)
    assert "SECRET" not in str(refused.value)
    assert refused.value.__cause__ is None and refused.value.__context__ is None


def test_a_tensor_of_numbers_of_any_numeric_dtype_is_accepted():
    counts = _hmm_counts().counts
    for tensor in (counts.astype(np.int32), counts.astype(object), counts.astype(np.float32)):
        cells = CellCounts(tensor, categories=HMM_CATEGORIES, **HMM_GRID)
        assert cells.counts.dtype == np.float64
        np.testing.assert_array_equal(cells.counts, counts)


def test_release_names_the_inconsistent_feature():
    counts = _hmm_counts()
    counts.counts[0, 0, 1, 0] += 2
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match=r"feature 'y' count a different"):
        release_cell_counts(counts, 1.0, ledger=ledger, backend="numpy")
    assert ledger.events == ()


@pytest.mark.parametrize(
    ("mechanism", "release"),
    [("laplace", "chain"), ("ops", "chain"), ("gibbs-exponential", "last")],
)
def test_hmm_bad_release_is_refused_by_name(tmp_path_factory, mechanism, release):
    def run(target, rng):
        return _hmm_sample(_hmm_model(), mechanism, target, rng, release=release)

    _assert_hmm_refusal(tmp_path_factory, run, ValueError, rf"release='{release}'")


def test_hmm_release_checks_the_generator_before_charging(tmp_path_factory):
    counts = _hmm_counts()

    def run(target, rng):
        (ledger,) = target.values()
        return release_cell_counts(counts, 1.0, ledger=ledger, backend="numpy", rng=5)

    _assert_hmm_refusal(
        tmp_path_factory, run, ValueError, r"rng must be a numpy\.random\.Generator"
    )


@pytest.mark.parametrize("ledger", [None, "budget.jsonl", 5.0])
def test_hmm_release_refuses_a_missing_ledger_by_name(ledger):
    counts = _hmm_counts()
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(TypeError, match=r"^ledger must be a PrivacyLedger or a PrivacySession"):
        release_cell_counts(counts, 1.0, ledger=ledger, backend="numpy", rng=rng)
    assert rng.bit_generator.state == state
