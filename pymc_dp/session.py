"""Budget sessions: a privacy ledger persisted in an append-only, hash-chained file.

A data holder who analyses one dataset over days, from notebooks and scripts, needs a budget
that remembers what every process spent. :class:`PrivacySession` is a
:class:`~pymc_dp.ledger.PrivacyLedger` whose events live in a file, so every route that takes a
ledger takes a session unchanged, and :func:`pymc_dp.sample` takes one as ``session=``.

Guarantee. Every budget decision is taken under an exclusive lock on ``path + ".lock"``
(:class:`filelock.FileLock`, a ``flock`` on POSIX), against every event in the file, written
by any process, after the whole file has been verified. :meth:`PrivacySession.charge` appends
the event, flushes it and ``fsync``\\s it before it returns, and every mechanism charges before
its noisy value leaves it (the Laplace and exact OPS releases before drawing the noise; the
MCMC posterior-sampling routes after sampling, before returning the draws), so a crash,
``SIGKILL`` or ``KeyboardInterrupt`` after a release cannot forget it (an interrupted
``charge`` either persisted its line or released nothing). :meth:`PrivacySession.hold` keeps
the lock across a run of several charges, so a run that passed its budget check is charged in
full and concurrent runs never overspend.

File format (``schema_version`` 1): UTF-8 text, one JSON object per line, each line ending in
``\\n``. The first line (``seq`` 0) is the header ``{"kind": "pymc_dp.session", "seq": 0,
"schema_version": 1, "dataset_id": ..., "budget": [ε, δ], "composition": ..., "created": ISO
time}``; the line with ``seq`` i ≥ 1 is ``{"kind": "event", "seq": i, "event":
PrivacyEvent.to_dict()}``. Each line is the record's
canonical JSON (sorted keys, no spaces, ASCII) with a last key ``"hash"`` appended, where
``hash_i = sha256(hash_{i-1} + canonical JSON of record i)`` (hex; ``hash_{-1}`` is 64 zeros).
An edited, deleted, inserted, reordered or cut line breaks the chain at that line. What a hash
chain cannot show by itself is the removal of whole lines at the end of the file: an open
session notices it (its file shrank), and a trace charged to the session records the file's
head (:class:`~pymc_dp.ledger.SessionSpend`), which :meth:`PrivacySession.verify` checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from pymc_dp.errors import SessionCorruptedError, SessionMismatchError
from pymc_dp.ledger import (
    PrivacyEvent,
    PrivacyLedger,
    SessionSpend,
    _parse_budget,
)

__all__ = [
    "SESSION_SCHEMA_VERSION",
    "PrivacySession",
]

SESSION_SCHEMA_VERSION = 1
_HEADER_KIND = "pymc_dp.session"
_EVENT_KIND = "event"
_GENESIS = "0" * 64
_HASH_SUFFIX_LENGTH = len(',"hash":""}') + 64


class PrivacySession(PrivacyLedger):
    """A privacy ledger for one dataset, persisted in an append-only, hash-chained file.

    Open (or create) the session for ``dataset_id`` with its total ``budget``; charge it
    through any route that takes a ledger, or through ``pymc_dp.sample(..., session=...)``.
    Several processes may spend from one file at once.

    Parameters
    ----------
    path : str or os.PathLike
        The session file. Created, with a header stating ``dataset_id`` and ``budget``, if it
        does not exist (its directory must). The lock is ``path + ".lock"``.
    dataset_id : str
        Non-empty name of the dataset the budget is for.
    budget : float or (float, float)
        Total (ε, δ) that every analysis of the dataset may spend together; a float means
        (ε, 0).
    timeout : float, optional
        Seconds to wait for the lock before raising :class:`TimeoutError` (and charging
        nothing). Default: wait as long as it takes. A run of :func:`pymc_dp.sample` holds the
        lock while it releases and samples, so another process's run on the same session
        waits for it.

    Attributes
    ----------
    path : str
        Absolute path of the session file.
    dataset_id : str
    budget : (float, float)
        The (ε, δ) budget stated in the file's header.

    Notes
    -----
    Guarantee: the events in the file, composed as :class:`~pymc_dp.ledger.PrivacyLedger`
    composes them (sequential; parallel within a declared partition), never exceed
    ``budget``, whatever the number of processes spending concurrently, because every
    :meth:`check` and :meth:`charge` re-reads and verifies the file under the lock and
    :meth:`charge` appends under the same lock. An event is flushed and ``fsync``'d before
    :meth:`charge` returns, that is, before any mechanism returns its noisy value (the Laplace
    and exact OPS releases draw their noise only afterwards). The guarantee
    assumes every writer goes through this class (the lock is advisory) and a filesystem
    where ``flock`` and ``fsync`` work (local disks; not every network filesystem).

    :attr:`~pymc_dp.PrivacyLedger.events`, :attr:`~pymc_dp.PrivacyLedger.epsilon` and
    :attr:`~pymc_dp.PrivacyLedger.delta` show the file as of the last read (at opening, and at every
    check, charge, :meth:`hold` or :meth:`verify`); call :meth:`verify` for the current state.
    Functions that read a ledger's last events after charging it (``PrivateConjugateGibbs``,
    ``pymc_dp.hmm.release_cell_counts``) must run inside ``with session.hold():`` when other
    processes may charge the same file; :func:`pymc_dp.sample` holds the session for its whole run.

    A session pickles as its path, dataset, budget and last-read events (no lock), so steps
    holding it can be sent to PyMC's worker processes; an unpickled copy re-reads and
    verifies the file before its first check or charge.

    Raises
    ------
    SessionMismatchError
        If the file was created for another ``dataset_id`` or another budget.
    SessionCorruptedError
        If the file fails verification.
    ValueError
        For an empty ``dataset_id`` or an invalid budget, or if the directory does not exist.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> records = np.random.default_rng(0).binomial(1, 0.3, size=500)  # private 0/1 outcomes
    >>> session = pymc_dp.PrivacySession("clinic.ledger", "clinic-2024", budget=1.0)
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=records)
    ...     idata = pymc_dp.sample(100, tune=100, chains=1, epsilon=0.5, session=session,
    ...                            progressbar=False)
    >>> session.epsilon
    0.5
    >>> pymc_dp.PrivacyLedger.from_datatree(idata).session.epsilon  # cumulative, in the trace
    0.5

    Opened again tomorrow, from any process, the file remembers the 0.5 already spent; a run
    asking for more than the remaining 0.5 raises ``BudgetExceededError`` and releases
    nothing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        dataset_id: str,
        budget: float | tuple[float, float],
        *,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(dataset_id, str) or not dataset_id:
            raise ValueError(f"dataset_id must be a non-empty string, got {dataset_id!r}")
        if budget is None:
            raise ValueError(
                "a session needs a budget: the total (epsilon, delta) every analysis of "
                f"{dataset_id!r} may spend together, e.g. budget=1.0 or budget=(1.0, 1e-6)"
            )
        parsed: tuple[float, float] = _parse_budget(budget)  # type: ignore[assignment]
        if timeout is not None and not (isinstance(timeout, int | float) and timeout >= 0):
            raise ValueError(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")
        self.path = os.path.abspath(os.fspath(path))
        if not os.path.isdir(os.path.dirname(self.path)):
            raise ValueError(
                f"the directory of the session file {self.path!r} does not exist; create it "
                "first (nothing was written)"
            )
        self.dataset_id = dataset_id
        self.timeout = timeout
        self._budget = parsed
        # PrivacyLedger.__init__ is not called: the budget comes from the file's header and
        # the events from its lines (no in-memory charges).
        self._events: list[PrivacyEvent] = []
        self._hashes: list[str] = []  # hash of every line read so far; [0] is the header's
        self._lock = _file_lock(self.path)
        self._held = threading.local()
        with self._locked():  # creates the file if needed, then verifies it
            pass

    # --- the ledger ----------------------------------------------------------------------
    @property
    def budget(self) -> tuple[float, float]:
        """The (ε, δ) budget stated in the file's header (read-only)."""
        return self._budget

    @property
    def session(self) -> SessionSpend:
        """This session's :class:`~pymc_dp.ledger.SessionSpend` as of the last read."""
        return SessionSpend(
            path=self.path,
            dataset_id=self.dataset_id,
            epsilon=self.epsilon,
            delta=self.delta,
            n_events=len(self._events),
            head=self._hashes[-1],
        )

    def check(self, epsilon: float, delta: float = 0.0, partition: str = "") -> None:
        """Raise :class:`~pymc_dp.BudgetExceededError` if spending (epsilon, delta) would take
        the events in the file — every process's — past the budget. Records nothing.

        Re-reads and verifies the file under the lock.

        Raises
        ------
        BudgetExceededError, SessionCorruptedError, TimeoutError
        """
        with self._locked():
            super().check(epsilon, delta, partition)

    def charge(self, event: PrivacyEvent) -> PrivacyEvent:
        """Check the budget against the file, then append ``event`` durably.

        Under the lock: re-read and verify the file, check the budget against every event in
        it, append one line, flush and ``fsync`` it, then return. Call *before* the noisy value
        is drawn or returned (every mechanism of pymc_dp does).

        Returns
        -------
        PrivacyEvent
            ``event`` (the same object, now also last in :attr:`~pymc_dp.PrivacyLedger.events`).

        Raises
        ------
        BudgetExceededError
            If the event would exceed the budget; the file is unchanged.
        SessionCorruptedError
            If the file fails verification; the file is unchanged.
        TimeoutError
            If the lock was not acquired within ``timeout``; the file is unchanged.
        OSError
            If the line could not be written and synced; the file is restored to its
            previous length when possible, and the event counts as not charged.
        """
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"a session charges PrivacyEvent objects, got {type(event).__name__}")
        with self._locked():
            super().check(event.epsilon, event.delta, event.partition)
            self._append({"kind": _EVENT_KIND, "event": event.to_dict()}, event)
        return event

    @contextlib.contextmanager
    def hold(self) -> Iterator[PrivacySession]:
        """Hold the session's lock for a run of checks and charges (reentrant).

        Inside the block no other process can charge the file, so a run that checked its whole cost
        (``check_all``) is charged in full, and :attr:`~pymc_dp.PrivacyLedger.events` grows only by
        this run's charges. :func:`pymc_dp.sample` holds the session from its budget check to its
        last charge. Keep the block short: other processes wait for it.

        Examples
        --------
        Two releases that must both fit, or neither happen:

        >>> import numpy as np
        >>> import pymc_dp
        >>> from pymc_dp.mechanisms import release_laplace
        >>> session = pymc_dp.PrivacySession("clinic.ledger", "clinic-2024", budget=1.0)
        >>> with session.hold():
        ...     session.check_all([(0.5, 0.0), (0.25, 0.0)])
        ...     first = release_laplace(np.array([3.0]), sensitivity=1.0, epsilon=0.5,
        ...                             ledger=session, neighbouring="replace-one",
        ...                             variables=("y",), statistic="count of y")
        ...     second = release_laplace(np.array([7.0]), sensitivity=1.0, epsilon=0.25,
        ...                              ledger=session, neighbouring="replace-one",
        ...                              variables=("z",), statistic="count of z")
        >>> session.epsilon
        0.75
        """
        with self._locked():
            yield self

    def verify(self, spend: SessionSpend | None = None) -> PrivacySession:
        """Re-read the file under the lock and verify every line; returns the session.

        Parameters
        ----------
        spend : SessionSpend, optional
            The session record of a trace charged to this file
            (``PrivacyLedger.from_datatree(idata).session``): also check that the file still
            holds the history that trace saw (its hash chain passes through ``spend.head``
            at line ``spend.n_events``), which detects whole lines removed from the end.

        Raises
        ------
        SessionCorruptedError
            If a line fails verification, or the file no longer holds ``spend``'s history.
        SessionMismatchError
            If ``spend`` names another file or dataset.
        """
        with self._locked():
            if spend is None:
                return self
            if (spend.path, spend.dataset_id) != (self.path, self.dataset_id):
                raise SessionMismatchError(
                    f"that record is of session {spend.path!r} ({spend.dataset_id!r}), not of "
                    f"{self.path!r} ({self.dataset_id!r})"
                )
            if spend.n_events >= len(self._hashes) or self._hashes[spend.n_events] != spend.head:
                raise SessionCorruptedError(
                    f"{self.path}: the file no longer holds the history a trace recorded "
                    f"({spend.n_events} events ending in {spend.head[:12]}…); events were "
                    f"removed or the file was replaced (it has {len(self._events)} events). "
                    "Its spend cannot be trusted: restore it from a backup."
                )
        return self

    def copy(self) -> PrivacyLedger:
        """An in-memory :class:`~pymc_dp.ledger.PrivacyLedger` snapshot (same budget and
        events, and :attr:`session`); charging it does not touch the file."""
        return super().copy()

    # --- pickling: path, dataset, budget and last-read events; never the lock ---------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"], state["_held"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = _file_lock(self.path)
        self._held = threading.local()

    def __repr__(self) -> str:
        eps, delta = self.budget
        return (
            f"PrivacySession(path={self.path!r}, dataset_id={self.dataset_id!r}, "
            f"events={len(self)}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"budget=({eps:g}, {delta:g}), composition={self.composition})"
        )

    # --- the file ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Acquire the lock (reentrant within a thread), then create or re-read the file."""
        depth = getattr(self._held, "depth", 0)
        if depth == 0:
            try:
                self._lock.acquire(
                    timeout=-1 if self.timeout is None else self.timeout, poll_interval=0.005
                )
            except Timeout as error:
                raise TimeoutError(
                    f"{self.path}: another process held the session's lock for more than "
                    f"{self.timeout:g} s; nothing was charged or released"
                ) from error
        self._held.depth = depth + 1
        try:
            # also inside a hold: nobody else charges then, but a hand edit is still caught
            self._read_or_create()
            yield
        finally:
            self._held.depth = depth
            if depth == 0:
                self._lock.release()

    def _read_or_create(self) -> None:
        if not os.path.exists(self.path):
            self._create()
        self._read()

    def _create(self) -> None:
        """Write the header to a temporary file, fsync it, link it into place, fsync the
        directory: the session file appears whole or not at all."""
        eps, delta = self._budget
        header = {
            "kind": _HEADER_KIND,
            "seq": 0,
            "schema_version": SESSION_SCHEMA_VERSION,
            "dataset_id": self.dataset_id,
            "budget": [eps, delta],
            "composition": self.composition,
            "created": datetime.now(UTC).isoformat(),
        }
        line, _ = _line(_GENESIS, header)
        temporary = f"{self.path}.{os.getpid()}.{threading.get_ident()}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)  # left by a crashed creation of this pid and thread
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, self.path)  # never overwrites
        except FileExistsError:
            pass  # created meanwhile by a writer that did not take the lock; _read judges it
        except OSError:  # a filesystem without hard links: we hold the lock, the path was free
            os.replace(temporary, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        _fsync_directory(os.path.dirname(self.path))

    def _read(self) -> None:
        """Verify every line of the file and bring the in-memory events up to date.

        Events already read keep their identity (routes compare events with ``is``).
        """
        data = Path(self.path).read_bytes()
        if not data:
            raise self._corruption(0, "the file is empty (no header)")
        lines = data.split(b"\n")
        if lines[-1]:
            raise self._corruption(
                len(lines) - 1,
                "the last line is cut (it does not end in a newline): a charge was interrupted "
                "while writing it, so its release did not happen, or the file was truncated",
            )
        lines = lines[:-1]
        known = len(self._hashes)
        if len(lines) < known:
            raise self._corruption(
                len(lines),
                f"the file has {len(lines)} lines, fewer than the {known} this session already "
                "read: lines were removed",
            )
        previous = _GENESIS
        hashes: list[str] = []
        for index, raw in enumerate(lines):
            body, stored = self._split(index, raw)
            if hashlib.sha256(previous.encode("ascii") + body).hexdigest() != stored:
                raise self._corruption(
                    index,
                    "its hash does not match: this line was edited, or a line before it was "
                    "deleted, inserted or moved",
                )
            if index < known and stored != self._hashes[index]:
                raise self._corruption(index, "it differs from the line this session read before")
            hashes.append(stored)
            previous = stored
        if known == 0:
            self._check_header(lines[0])
        events = list(self._events)
        events += [self._parse_event(i, lines[i]) for i in range(max(known, 1), len(lines))]
        self._hashes, self._events = hashes, events

    def _split(self, index: int, raw: bytes) -> tuple[bytes, str]:
        """(canonical JSON of the record, stored hash) of one line."""
        prefix, suffix = raw[:-_HASH_SUFFIX_LENGTH], raw[-_HASH_SUFFIX_LENGTH:]
        if not (suffix.startswith(b',"hash":"') and suffix.endswith(b'"}') and prefix):
            raise self._corruption(index, 'it does not end in a "hash" field')
        stored = suffix[len(b',"hash":"') : -2].decode("ascii", errors="replace")
        return prefix + b"}", stored

    def _record(self, index: int, raw: bytes) -> dict[str, Any]:
        body, _ = self._split(index, raw)
        try:
            record = json.loads(body)
        except ValueError as error:
            raise self._corruption(index, "it is not valid JSON") from error
        if not isinstance(record, dict) or record.get("seq") != index:
            raise self._corruption(index, f"it is not record number {index} of a session file")
        if _canonical(record) != body:
            raise self._corruption(index, "it is not in canonical form")
        return record

    def _parse_event(self, index: int, raw: bytes) -> PrivacyEvent:
        record = self._record(index, raw)
        if record.get("kind") != _EVENT_KIND:
            raise self._corruption(index, "it is not an event record")
        try:
            return PrivacyEvent.from_dict(record["event"])
        except (KeyError, TypeError, ValueError) as error:
            raise self._corruption(index, f"its event is invalid ({error})") from error

    def _check_header(self, raw: bytes) -> None:
        record = self._record(0, raw)
        if record.get("kind") != _HEADER_KIND:
            raise self._corruption(0, "it is not a pymc_dp session header")
        if record.get("schema_version") != SESSION_SCHEMA_VERSION:
            raise self._corruption(
                0,
                f"schema_version {record.get('schema_version')!r} is not the "
                f"{SESSION_SCHEMA_VERSION} this version of pymc_dp reads",
            )
        try:
            budget = _parse_budget(tuple(record["budget"]))
        except (KeyError, TypeError, ValueError) as error:
            raise self._corruption(0, f"its budget is invalid ({error})") from error
        dataset_id = record.get("dataset_id")
        if dataset_id != self.dataset_id or budget != self._budget:
            raise SessionMismatchError(
                f"{self.path} is the session of dataset {dataset_id!r} with budget "
                f"(epsilon={budget[0]:g}, delta={budget[1]:g}); it was opened for "
                f"{self.dataset_id!r} with budget (epsilon={self._budget[0]:g}, "
                f"delta={self._budget[1]:g}). A session is never re-budgeted: open it with "
                "the dataset and budget it was created with, or start a new file. "
                "Nothing was charged."
            )

    def _append(self, record: dict[str, Any], event: PrivacyEvent) -> None:
        """Append one line and fsync it; on any failure cut the file back to its old length."""
        line, digest = _line(self._hashes[-1], {**record, "seq": len(self._hashes)})
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, line)
                os.fsync(fd)
            except BaseException:  # KeyboardInterrupt included: not charged, not released
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                    os.fsync(fd)
                raise
        finally:
            os.close(fd)
        self._hashes.append(digest)
        self._events.append(event)

    def _corruption(self, index: int, reason: str) -> SessionCorruptedError:
        return SessionCorruptedError(
            f"{self.path}, line {index + 1}: {reason}. The session's spend cannot be trusted, "
            "so nothing was charged or released. Restore the file from a backup (or, if a "
            "charge was interrupted while writing the last line, remove that partial line: "
            "its release never happened)."
        )


def _canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def _line(previous: str, record: dict[str, Any]) -> tuple[bytes, str]:
    """The file line of ``record`` chained to ``previous``, and its hash."""
    if "hash" in record:
        raise ValueError("a session record may not have a 'hash' field")
    body = _canonical(record)
    digest = hashlib.sha256(previous.encode("ascii") + body).hexdigest()
    return body[:-1] + b',"hash":"' + digest.encode("ascii") + b'"}\n', digest


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _file_lock(path: str) -> FileLock:
    # One lock object per path in a process (reentrant across sessions on the same file);
    # per-thread hold counts, so threads exclude each other like processes do.
    return FileLock(path + ".lock", is_singleton=True)
