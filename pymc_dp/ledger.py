"""Privacy events, the privacy ledger and composition.

Each release of information derived from private data is a frozen :class:`PrivacyEvent`
(after dp-accounting's ``DpEvent``: the event carries everything needed to account for it;
mechanisms never compute totals themselves). A :class:`PrivacyLedger` holds the events of one
analysis, enforces an optional (epsilon, delta) budget, and composes them.

:attr:`PrivacyLedger.epsilon` and :attr:`PrivacyLedger.delta` are *basic sequential
composition* (Dwork & Roth 2014, Thm 3.16; Foulds et al. 2016, Theorem 1): epsilons and deltas
add. Every record may appear in every release, so this is the safe default. Events that
declare the same ``partition`` touch disjoint sets of records and compose in parallel
(McSherry 2009, PINQ Thm 4; Foulds et al. 2016, §4.1 citing Song et al. 2013): the group
costs the largest (ε, δ) among them. :meth:`PrivacyLedger.epsilon_at` gives the tightest
valid total at a δ (advanced, PLD, RDP and bounded-range composition;
:mod:`pymc_dp.accounting`, which owns every composition rule), and a budget with δ > 0 is
checked against it.

The ledger is stored inside the ``xarray.DataTree`` returned by :func:`pymc_dp.sample`
(group ``privacy_ledger`` and root attribute ``pymc_dp_ledger``) and survives a netCDF round
trip. A ledger that outlives the process is a :class:`pymc_dp.session.PrivacySession` (a
subclass, persisted in an append-only file); a trace charged to one names it
(:class:`~pymc_dp.ledger.SessionSpend`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import math
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from pymc_dp.accounting import DEFAULT_DELTA, Composition, basic_composition
from pymc_dp.accounting import epsilon_at as _epsilon_at
from pymc_dp.certificate import is_certified, uncertified
from pymc_dp.errors import BudgetExceededError, UncertifiedTraceWarning

__all__ = [
    "LEDGER_ATTR",
    "LEDGER_COLUMNS",
    "LEDGER_GROUP",
    "NEIGHBOURING_RELATIONS",
    "Neighbouring",
    "PrivacyEvent",
    "PrivacyLedger",
    "Remaining",
    "SessionSpend",
    "compose",
    "seeded_noise_assumption",
    "split_epsilon",
    "validate_epsilon",
    "validate_neighbouring",
]

LEDGER_GROUP = "privacy_ledger"
"""Name of the DataTree group that holds the ledger (one row per event)."""
LEDGER_ATTR = "pymc_dp_ledger"
"""Name of the root attribute that holds the ledger as JSON."""

LEDGER_COLUMNS: tuple[str, ...] = (
    "mechanism",
    "variables",
    "statistic",
    "epsilon",
    "delta",
    "sensitivity",
    "noise_scale",
    "temperature",
    "neighbouring",
    "partition",
)
"""The columns of :meth:`~pymc_dp.PrivacyLedger.to_dataframe` by default (event fields)."""

Neighbouring = Literal["replace-one", "add-remove-one"]
NEIGHBOURING_RELATIONS: tuple[str, ...] = ("replace-one", "add-remove-one")
_SCHEMA_VERSION = 1
_FLOAT_COLUMNS = frozenset(
    {"epsilon", "delta", "sensitivity", "noise_scale", "temperature", "worst_case_epsilon", "rho"}
)
_TOLERANCE = 1e-12  # relative slack for floating-point sums of epsilons


def validate_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise ``ValueError`` unless it is finite and > 0."""
    value = float(epsilon)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


def split_epsilon(epsilon: float | Mapping[str, float], names: Iterable[str]) -> dict[str, float]:
    """Split a total epsilon across releases (sequential composition), or check a dict.

    A float is divided equally among ``names``; a dict must give a valid epsilon for exactly
    the releases in ``names``.

    Raises
    ------
    ValueError
        If an epsilon is invalid, or the dict misses or adds release names.
    """
    names = list(names)
    if isinstance(epsilon, Mapping):
        missing = sorted(set(names) - set(epsilon))
        extra = sorted(set(epsilon) - set(names))
        if missing or extra:
            raise ValueError(
                f"epsilon dict must name exactly the private releases {names}; "
                f"missing {missing}, unknown {extra}"
            )
        return {name: validate_epsilon(epsilon[name], f"epsilon[{name!r}]") for name in names}
    total = validate_epsilon(epsilon)
    return {name: total / len(names) for name in names}


def validate_delta(
    delta: float, name: str = "delta", *, positive: bool = False, reason: str = ""
) -> float:
    """Return the DP ``delta`` as a float, or raise ``ValueError`` unless 0 <= δ < 1.

    ``positive=True`` also refuses δ = 0 (mechanisms and accountings that are never pure DP:
    the Gaussian mechanism, tight composition); ``reason`` is appended to the message to say
    why. The one check of δ for every mechanism, route and accounting that takes one (the
    accounting module, which imports nothing from the ledger, keeps its own).
    """
    value = float(delta)
    above_zero = 0.0 < value if positive else 0.0 <= value
    if not (math.isfinite(value) and above_zero and value < 1.0):
        bound = "0 <" if positive else "0 <="
        raise ValueError(f"{name} must satisfy {bound} {name} < 1{reason}, got {delta!r}")
    return value


def validate_neighbouring(neighbouring: str) -> str:
    """Return ``neighbouring`` or raise ``ValueError`` if it is not a known relation."""
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"neighbouring must be one of {NEIGHBOURING_RELATIONS}, got {neighbouring!r}"
        )
    return neighbouring


def seeded_noise_assumption(noise: str) -> str:
    """The ``unverified_assumption`` of an event whose noise a NumPy generator drew.

    ``noise`` says which (the NumPy backend of the Laplace and Gaussian mechanisms, or a
    posterior-sampling run's draws seeded from ``noise_rng``). Anyone who knows the seed
    reproduces the noise, and NumPy's floating-point draws are open to Mironov's attack, so
    the event is not a guarantee (:attr:`PrivacyLedger.guaranteed` is False).
    """
    return (
        f"{noise} (tests and simulations only): the guarantee assumes the generator's state "
        "stays secret (a known seed reproduces the noise) and ignores floating-point attacks "
        "on the noise (Mironov 2012)"
    )


@dataclass(frozen=True)
class PrivacyEvent:
    """One release of information about private records.

    The fields are sufficient to account for the release: a (epsilon, delta)-DP mechanism
    applied once, under the stated neighbouring relation, with the stated sensitivity.

    Attributes
    ----------
    mechanism : str
        Mechanism name, e.g. ``"laplace"``.
    epsilon, delta : float
        Privacy cost of this release (epsilon > 0, 0 <= delta < 1).
    sensitivity : float
        Data-independent sensitivity used to calibrate the noise (L1 for Laplace, L2 for
        Gaussian).
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation under which the guarantee holds.
    variables : tuple of str
        Model variables whose private data the release reads.
    noise_backend : str
        Source of the noise: ``"opendp"`` (floating-point safe) or ``"numpy"``.
    noise_scale : float
        Scale of the noise (Laplace b = sensitivity / epsilon; Gaussian standard deviation σ);
        None when not applicable.
    statistic : str
        What was released, in words.
    source : str
        Paper, section and equation the mechanism implements.
    temperature : float or None
        Temperature T of a posterior-sampling (exponential) mechanism; None for noise mechanisms.
    assumes_convergence : bool
        True when the guarantee holds only if the MCMC chain that produced the released draw
        has converged to its target (one posterior sample, Foulds et al. 2016, §4).
    worst_case_epsilon : float or None
        For ``assumes_convergence`` events: the epsilon of the whole chain by sequential
        composition of every update, which holds without the convergence assumption. None
        when no such bound exists (private Metropolis: rejections need a δ).
    partition : str
        Non-empty when this release reads only one part of a partition of the records, and
        every other release with the same ``partition`` reads a different part. Parallel
        composition then holds. The parts must be defined by a public attribute that a
        neighbouring change cannot move a record across (or neighbours must be add/remove-one);
        otherwise one record can touch two parts, and the group costs twice the maximum.
    unverified_assumption : str
        Non-empty when the stated (epsilon, delta) holds only under this assumption, which the
        mechanism cannot check and its own output may contradict (private Metropolis releasing
        the chain assumes a bound on every step's rejection probability). Such an event is
        **not a guarantee**; it is recorded only on explicit opt-in, and
        :attr:`PrivacyLedger.guaranteed` is False while the ledger holds one.
    clamping : str
        Non-empty when records outside their declared bounds were clamped into them before
        the statistic was computed (``pymc_dp.sample(clamp_to_bounds=...)``): names the
        variables and the bounds, never how many records were clamped (that count is
        private). Clamping is a per-record map into the declared domain, so the stated
        sensitivity and (epsilon, delta) still hold; the statistic is that of the clamped
        records.
    time : str
        ISO 8601 UTC time at which the event was recorded (before the value was returned).
    compositions : int
        k >= 1: the event stands for k identical releases of one mechanism, composed
        adaptively, each costing (epsilon/k, delta/k) — e.g. the k sweeps of a Gibbs chain at
        one temperature, each sweep (epsilon/k)-DP; ``noise_scale`` and ``temperature`` are
        those of each release. 1 (default, and for every event recorded before this field
        existed) claims nothing finer than one (epsilon, delta)-DP release, which is always
        valid. Tight accounting (:mod:`pymc_dp.accounting`) composes the k releases; basic
        composition only reads the totals. Serialised only when k > 1, so an event with
        k = 1 has the same JSON as before the field existed.
    rho : float or None
        ρ of a release that is ρ-zero-concentrated DP (Bun & Steinke 2016, Def. 1.1): the
        Gaussian mechanism, ρ = Δ₂²/(2σ²) per release (Prop. 1.6), whose (epsilon, delta) is
        the conversion of ρ at delta (:mod:`pymc_dp.mechanisms.gaussian`). None for every
        other mechanism, and then not serialised (the JSON of older events is unchanged).

    Examples
    --------
    >>> from pymc_dp import PrivacyEvent
    >>> event = PrivacyEvent(mechanism="laplace", epsilon=1.0, delta=0.0, sensitivity=1.0,
    ...                      neighbouring="replace-one", variables=("y",),
    ...                      noise_backend="opendp", noise_scale=1.0, statistic="count of y")
    >>> event.epsilon, event.noise_scale, event.neighbouring
    (1.0, 1.0, 'replace-one')
    """

    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    neighbouring: str
    variables: tuple[str, ...]
    noise_backend: str
    noise_scale: float | None = None
    statistic: str = ""
    source: str = ""
    temperature: float | None = None
    assumes_convergence: bool = False
    worst_case_epsilon: float | None = None
    partition: str = ""
    unverified_assumption: str = ""
    clamping: str = ""
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    compositions: int = 1
    rho: float | None = None

    def __post_init__(self) -> None:
        validate_epsilon(self.epsilon)
        validate_delta(self.delta)
        validate_neighbouring(self.neighbouring)
        if not math.isfinite(self.sensitivity) or self.sensitivity <= 0:
            raise ValueError(f"sensitivity must be finite and > 0, got {self.sensitivity!r}")
        if (
            isinstance(self.compositions, bool)
            or not isinstance(self.compositions, int | np.integer)
            or self.compositions < 1
        ):
            raise ValueError(f"compositions must be an integer >= 1, got {self.compositions!r}")
        if self.rho is not None:
            rho = float(self.rho)
            if isinstance(self.rho, bool) or not math.isfinite(rho) or rho <= 0:
                raise ValueError(f"rho must be a finite number > 0 or None, got {self.rho!r}")
            object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "compositions", int(self.compositions))

    def to_dict(self) -> dict[str, Any]:
        """Return the event as a JSON-serialisable dict (``compositions`` only when > 1,
        ``rho`` only when set)."""
        record = dataclasses.asdict(self)
        record["variables"] = list(self.variables)
        if record["compositions"] == 1:
            del record["compositions"]
        if record["rho"] is None:
            del record["rho"]
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> PrivacyEvent:
        """Rebuild an event from :meth:`to_dict` output."""
        return cls(**{**record, "variables": tuple(record["variables"])})


@dataclass(frozen=True)
class SessionSpend:
    """The persisted session a run was charged to, and its cumulative spend after the run.

    Stored with the run's ledger in the trace (:attr:`~pymc_dp.PrivacyLedger.session`), so a reader
    of the trace sees both what this run cost (the ledger's events) and what the data holder
    had spent on the dataset in total when the run ended.

    Attributes
    ----------
    path : str
        Absolute path of the session file (:class:`pymc_dp.session.PrivacySession`).
    dataset_id : str
        The dataset the session's budget is for.
    epsilon, delta : float
        Cumulative (ε, δ) of every event in the file when the run ended, composed as the
        ledger composes (this run's events included).
    n_events : int
        Number of events in the file when the run ended.
    head : str
        Hash (sha256, hex) of the file's last line when the run ended: the file still holds
        this run's history if its hash chain passes through ``head``.
    """

    path: str
    dataset_id: str
    epsilon: float
    delta: float
    n_events: int
    head: str

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-serialisable dict."""
        return dataclasses.asdict(self)


class Remaining(NamedTuple):
    """What is left of a budget: ``(epsilon, delta)``, a tuple of floats (unrounded, so it
    adds, compares and unpacks as numbers) that prints rounded.

    The repr rounds ε to 12 decimals (the float error of subtracting spends, 1 − 0.7 =
    0.30000000000000004 or a spent budget's 5.6e-17, is gone) and shows both numbers with 12
    significant digits: ``Remaining(epsilon=0.3, delta=1e-06)``.
    """

    epsilon: float
    delta: float

    def __repr__(self) -> str:
        epsilon = round(self.epsilon, 12) + 0.0  # + 0.0: no "-0"
        return f"Remaining(epsilon={epsilon:.12g}, delta={self.delta:.12g})"


class PrivacyLedger:
    """The privacy events of one analysis, with composition and an optional budget.

    Parameters
    ----------
    budget : float or (float, float), optional
        Total (epsilon, delta) that the events may spend; a float means (epsilon, 0).
        :meth:`charge` raises :class:`~pymc_dp.BudgetExceededError` and records nothing when an
        event would exceed it.
    events : iterable of PrivacyEvent, optional
        Events already spent (e.g. from earlier analyses of the same records).
    tight_budget : bool, default False
        Check an (ε, δ) budget, δ > 0, against the tightest valid total (:meth:`epsilon_at`)
        instead of basic composition. Only valid when the sequence of releases and their
        privacy parameters is fixed in advance: a budget checked release by release, with
        each ε chosen after seeing earlier results, is a *privacy filter*, for which basic
        composition is valid but PLD and advanced composition are not in general (Rogers,
        Roth, Ullman & Vadhan 2016, "Privacy Odometers and Filters"). Off by default, and
        always off for a :class:`~pymc_dp.session.PrivacySession`, whose budget is spent over
        days by analyses chosen as results come in.

    Notes
    -----
    :attr:`epsilon` and :attr:`delta` use basic sequential composition (Foulds et al. 2016,
    Theorem 1): the epsilons add and the deltas add. This holds whatever the overlap between
    the records of the releases. :meth:`epsilon_at` gives the tightest valid ε at a δ
    (:mod:`pymc_dp.accounting`).

    Budget. By default a charge fits if the basic totals stay within the budget, valid
    whatever the order and choice of releases. With ``tight_budget=True`` and (ε, δ), δ > 0,
    it fits if the basic totals stay within (ε, δ) *or* the tightest valid ε at
    the budget's δ, :meth:`epsilon_at`, stays within ε: a long run of small Laplace or
    exponential-mechanism releases then fits where their sum would not. The event being
    charged is accounted tightly only if its mechanism is identified (:meth:`charge`); a
    bare cost (:meth:`check`, :meth:`check_all`) is accounted by basic composition on top of
    the tight total of the events already recorded. The tight figures assume the releases'
    parameters are not chosen after seeing earlier outputs (see :mod:`pymc_dp.accounting`).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_laplace
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> _ = release_laplace(np.array([3.0]), sensitivity=1.0, epsilon=0.25, ledger=ledger,
    ...                     neighbouring="replace-one", variables=("y",), statistic="count of y")
    >>> ledger
    PrivacyLedger(events=1, epsilon=0.25, delta=0, budget=(1, 0), composition=...)
    >>> ledger.remaining()
    Remaining(epsilon=0.75, delta=0)

    The ledger of a private trace is read back with
    ``pymc_dp.PrivacyLedger.from_datatree(idata)`` (:func:`pymc_dp.sample`).
    """

    composition = "sequential; parallel within partitions"
    tight_budget: bool = False
    """Whether an (ε, δ) budget is checked against :meth:`epsilon_at` (see Parameters)."""
    session: SessionSpend | None = None
    """The persisted session a trace's run was charged to (None for an in-memory ledger)."""

    def __init__(
        self,
        budget: float | tuple[float, float] | None = None,
        events: Iterable[PrivacyEvent] = (),
        *,
        tight_budget: bool = False,
    ) -> None:
        self.budget = _parse_budget(budget)
        self.tight_budget = bool(tight_budget)
        self._events: list[PrivacyEvent] = []
        for event in events:
            self.charge(event)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, oldest first."""
        return tuple(self._events)

    @property
    def epsilon(self) -> float:
        """Total epsilon by basic composition: sequential, and parallel within each declared
        partition (the tightest valid total at a δ: :meth:`epsilon_at`)."""
        return basic_composition(self._events)[0]

    @property
    def delta(self) -> float:
        """Total delta: sequential, and parallel within each declared partition."""
        return basic_composition(self._events)[1]

    @property
    def guaranteed(self) -> bool:
        """False while any event holds only under an ``unverified_assumption``."""
        return not any(e.unverified_assumption for e in self._events)

    @property
    def reporting_delta(self) -> float:
        """The δ at which the tight total is reported: the budget's δ, or
        :data:`~pymc_dp.accounting.DEFAULT_DELTA` (1e-6) without a budget."""
        return self.budget[1] if self.budget is not None else DEFAULT_DELTA

    def epsilon_at(self, delta: float) -> Composition:
        """The tightest valid total ε of the events at ``delta``, and how it was found.

        The minimum over basic, advanced (Kairouz, Oh & Viswanath 2015), PLD and RDP
        (dp-accounting, for Laplace events) and bounded-range (Dong, Durfee & Rogers 2020,
        for exponential-mechanism events) composition, each applied only where it is valid;
        partitions compose in parallel under every one. Never above :attr:`epsilon` (basic);
        at ``delta`` = 0 it is basic composition. Events whose mechanism is not identified
        are accounted by basic composition. See :mod:`pymc_dp.accounting`.

        Parameters
        ----------
        delta : float
            0 <= δ < 1.

        Returns
        -------
        pymc_dp.accounting.Composition
            Frozen: ``epsilon``, ``delta``, ``method`` and ``per_method`` (every
            accounting's ε), ``basic_only`` (events accounted by basic composition only) and
            the events' unverified assumptions (``guaranteed``).

        Raises
        ------
        ValueError
            If ``delta`` is not in [0, 1).

        Examples
        --------
        >>> from pymc_dp import PrivacyEvent, PrivacyLedger
        >>> laplace = PrivacyEvent(mechanism="laplace", epsilon=1.0, delta=0.0, sensitivity=1.0,
        ...                        neighbouring="add-remove-one", variables=("y",),
        ...                        noise_backend="opendp", noise_scale=1.0)
        >>> ledger = PrivacyLedger(events=[laplace] * 100)  # 100 releases at ε = 1
        >>> ledger.epsilon, round(ledger.epsilon_at(1e-6).epsilon, 1)
        (100.0, 71.5)
        """
        return _epsilon_at(self._events, delta)

    def remaining(self) -> Remaining:
        """(epsilon, delta) left in the budget, as a :class:`~pymc_dp.ledger.Remaining` (a
        tuple that prints rounded); ``(inf, 1.0)`` when there is no budget.

        With ``tight_budget`` and a budget (ε, δ), δ > 0, the epsilon left is ε minus the
        tightest total at δ
        (:meth:`epsilon_at`): a pure release of at most that much still fits. The delta left
        is δ minus the events' summed deltas.
        """
        if self.budget is None:
            return Remaining(math.inf, 1.0)
        budget_eps, budget_delta = self.budget
        tight = self.tight_budget and budget_delta > 0
        spent = self.epsilon_at(budget_delta).epsilon if tight else self.epsilon
        return Remaining(budget_eps - spent, budget_delta - self.delta)

    def check(self, epsilon: float, delta: float = 0.0, partition: str = "") -> None:
        """Raise :class:`~pymc_dp.BudgetExceededError` if spending (epsilon, delta) — in
        ``partition``, if given — would exceed the budget. Records nothing.

        The cost's mechanism is not known, so it is added by basic composition to the
        tightest total of the recorded events (see the class notes).
        """
        self._check_event(_Cost(epsilon, delta, partition))

    def charge(self, event: PrivacyEvent) -> PrivacyEvent:
        """Check the budget, then record ``event``. Call *before* the noisy value is returned.

        The budget check accounts ``event`` by its mechanism (class notes).
        """
        self._check_event(event)
        self._events.append(event)
        return event

    def _check_event(self, event: PrivacyEvent | _Cost) -> None:
        """Raise if ``event`` (an event or a bare cost) would take the ledger over budget."""
        if self.budget is None:
            return
        budget_eps, budget_delta = self.budget
        events = (*self._events, event)
        new_eps, new_delta = basic_composition(events)
        if new_eps <= budget_eps * (1 + _TOLERANCE) and new_delta <= budget_delta + _TOLERANCE:
            return
        tight = ""
        if self.tight_budget and budget_delta > 0:
            composition = _epsilon_at(events, budget_delta)
            if composition.epsilon <= budget_eps * (1 + _TOLERANCE):
                return
            tight = (
                f" (tightest valid epsilon at delta={budget_delta:g}: "
                f"{composition.epsilon:g}, by {composition.method} composition)"
            )
        raise BudgetExceededError(
            f"release of (epsilon={event.epsilon:g}, delta={event.delta:g}) would bring the "
            f"total to (epsilon={new_eps:g}, delta={new_delta:g}){tight}, over the budget "
            f"(epsilon={budget_eps:g}, delta={budget_delta:g}); nothing was released"
        )

    def check_all(self, costs: Iterable[tuple[float, float]]) -> None:
        """Raise if the (epsilon, delta) costs *together* would exceed the budget (their sum,
        added by basic composition, as :meth:`check`)."""
        costs = list(costs)
        self.check(math.fsum(c[0] for c in costs), math.fsum(c[1] for c in costs))

    @contextlib.contextmanager
    def hold(self) -> Iterator[PrivacyLedger]:
        """Hold the ledger for a run of checks and charges that must not interleave with others.

        :func:`pymc_dp.sample` holds its ledger from the budget check to the last charge, so a
        run that passes its check is charged in full. An in-memory ledger belongs to one
        process, so this holds nothing; :class:`pymc_dp.session.PrivacySession` takes its
        file lock.
        """
        yield self

    # --- serialisation -------------------------------------------------------------------
    def to_json(self) -> str:
        """The ledger (events, totals, budget, composition; session, if any) as a JSON string.

        ``"epsilon"`` and ``"delta"`` are the basic totals; ``"tight"`` is
        :meth:`epsilon_at` at :attr:`reporting_delta` (``Composition.to_dict``: infinite
        figures as null).
        """
        record = {
            "schema_version": _SCHEMA_VERSION,
            "composition": self.composition,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "budget": list(self.budget) if self.budget is not None else None,
            "events": [e.to_dict() for e in self._events],
            "tight": self.epsilon_at(self.reporting_delta).to_dict(),
        }
        if self.tight_budget:
            record["tight_budget"] = True
        if self.session is not None:
            record["session"] = self.session.to_dict()
        return json.dumps(record)

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Rebuild a ledger from :meth:`to_json` output (an in-memory :class:`PrivacyLedger`,
        also when called on a subclass)."""
        record = json.loads(text)
        budget = tuple(record["budget"]) if record.get("budget") is not None else None
        ledger = PrivacyLedger(
            budget=budget,
            events=[PrivacyEvent.from_dict(e) for e in record["events"]],
            tight_budget=bool(record.get("tight_budget", False)),
        )
        if record.get("session") is not None:
            ledger.session = SessionSpend(**record["session"])
        return ledger

    def to_dataset(self) -> xr.Dataset:
        """The events as an ``xarray.Dataset`` with one row per event (dimension ``event``).

        Totals, composition and budget are attributes; the JSON form is in attribute
        ``ledger_json`` so that nested metadata survives netCDF. ``total_epsilon`` and
        ``total_delta`` are the basic totals; ``tight_epsilon`` (at ``tight_delta``, the
        :attr:`reporting_delta`) and ``tight_method`` are :meth:`epsilon_at`'s. A ledger
        charged to a session also has ``session_path``, ``session_dataset_id``,
        ``session_epsilon``, ``session_delta``, ``session_events`` and ``session_head``
        (:class:`~pymc_dp.ledger.SessionSpend`).
        """
        columns = [f.name for f in dataclasses.fields(PrivacyEvent)]
        data_vars = {}
        for column in columns:
            values = [getattr(e, column) for e in self._events]
            if column == "variables":
                values = [",".join(v) for v in values]
            if column in _FLOAT_COLUMNS:
                array = np.asarray([np.nan if v is None else v for v in values], np.float64)
            elif column == "assumes_convergence":
                array = np.asarray(values, dtype=bool)
            elif column == "compositions":
                array = np.asarray(values, dtype=np.int64)
            else:
                array = (
                    np.asarray(values, dtype=object).astype(str)
                    if values
                    else np.array([], dtype=str)
                )
            data_vars[column] = ("event", array)
        tight = self.epsilon_at(self.reporting_delta)
        attrs = {
            "composition": self.composition,
            "total_epsilon": self.epsilon,
            "total_delta": self.delta,
            "tight_epsilon": tight.epsilon,
            "tight_delta": tight.delta,
            "tight_method": tight.method,
            "budget_epsilon": self.budget[0] if self.budget else np.nan,
            "budget_delta": self.budget[1] if self.budget else np.nan,
            "guaranteed": int(self.guaranteed),
            "ledger_json": self.to_json(),
        }
        if self.session is not None:
            attrs.update(
                session_path=self.session.path,
                session_dataset_id=self.session.dataset_id,
                session_epsilon=self.session.epsilon,
                session_delta=self.session.delta,
                session_events=self.session.n_events,
                session_head=self.session.head,
            )
        return xr.Dataset(data_vars, coords={"event": np.arange(len(self._events))}, attrs=attrs)

    def to_dataframe(self, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """The events as a ``pandas.DataFrame``, one row per event (index ``event``).

        Parameters
        ----------
        columns : iterable of str, optional
            Fields of :class:`PrivacyEvent` to keep, in order; by default
            :data:`~pymc_dp.ledger.LEDGER_COLUMNS` (what was released, its cost,
            sensitivity, noise scale or temperature, neighbouring relation).
            ``noise_scale`` and ``temperature`` are left out when no event fills them
            (posterior sampling has no noise scale, a noise mechanism no temperature).

        Returns
        -------
        pandas.DataFrame
            ``variables`` joined by ", "; ``attrs`` holds the totals: ``epsilon``, ``delta``
            (basic composition), ``tight_epsilon`` at ``tight_delta`` and ``tight_method``
            (:meth:`epsilon_at` at :attr:`reporting_delta`), ``budget`` (or None) and
            ``guaranteed``.

        Examples
        --------
        >>> import numpy as np
        >>> import pymc_dp
        >>> from pymc_dp.mechanisms import release_laplace
        >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
        >>> _ = release_laplace(np.array([3.0]), sensitivity=1.0, epsilon=0.25, ledger=ledger,
        ...                     neighbouring="replace-one", variables=("y",),
        ...                     statistic="count of y")
        >>> table = ledger.to_dataframe()
        >>> table[["mechanism", "variables", "epsilon", "noise_scale"]]
              mechanism variables  epsilon  noise_scale
        event
        0       laplace         y     0.25          4.0
        >>> table.attrs["epsilon"]
        0.25
        """
        fields = [f.name for f in dataclasses.fields(PrivacyEvent)]
        chosen = list(LEDGER_COLUMNS if columns is None else columns)
        unknown = [c for c in chosen if c not in fields]
        if unknown:
            raise ValueError(f"not fields of PrivacyEvent: {unknown}; they are {fields}")
        rows = [
            {c: ", ".join(e.variables) if c == "variables" else getattr(e, c) for c in chosen}
            for e in self._events
        ]
        table = pd.DataFrame(rows, columns=chosen)
        # one of noise_scale and temperature applies to each mechanism
        empty = [c for c in ("noise_scale", "temperature") if c in chosen and table[c].isna().all()]
        table = table.drop(columns=empty)
        table.index.name = "event"
        tight = self.epsilon_at(self.reporting_delta)
        table.attrs.update(
            epsilon=self.epsilon,
            delta=self.delta,
            tight_epsilon=tight.epsilon,
            tight_delta=tight.delta,
            tight_method=tight.method,
            budget=self.budget,
            guaranteed=self.guaranteed,
        )
        return table

    def _repr_html_(self) -> str:
        """Jupyter's view: the totals, the budget and the events' table (HTML-escaped)."""
        table = self.to_dataframe()
        tight = table.attrs
        lines = [
            f"<strong>PrivacyLedger</strong>: {len(self)} event(s), "
            f"&epsilon; = {self.epsilon:g}, &delta; = {self.delta:g} "
            f"({html.escape(self.composition)}); tightest valid: &epsilon; = "
            f"{tight['tight_epsilon']:.4g} at &delta; = {tight['tight_delta']:g} "
            f"({html.escape(str(tight['tight_method']))})"
        ]
        if self.budget is not None:
            left = self.remaining()
            lines.append(
                f"budget (&epsilon;, &delta;) = ({self.budget[0]:g}, {self.budget[1]:g}); "
                f"remaining ({left.epsilon:.4g}, {left.delta:.4g})"
            )
        if not self.guaranteed:
            lines.append(
                "<strong>NOT A GUARANTEE</strong>: an event rests on an unverified "
                "assumption (column unverified_assumption)"
            )
        if self.session is not None:
            lines.append(f"session {html.escape(str(self.session.dataset_id))}")
        body = table.to_html(escape=True, float_format=lambda v: f"{v:.4g}", na_rep="")
        return "<div>" + "<br>".join(lines) + body + "</div>"

    @classmethod
    def from_dataset(cls, dataset: xr.Dataset) -> PrivacyLedger:
        """Rebuild a ledger from :meth:`to_dataset` output."""
        return cls.from_json(str(dataset.attrs["ledger_json"]))

    @classmethod
    def from_datatree(cls, idata: xr.DataTree) -> PrivacyLedger:
        """Read the ledger stored in a trace returned by :func:`pymc_dp.sample`.

        The ledger covers what the trace held when it was made (:mod:`pymc_dp.certificate`).
        If anything was added or changed since — ``observed_data`` from
        ``pm.sample_posterior_predictive(..., extend_inferencedata=True)``, a
        ``log_likelihood``, a hand-made variable — the ledger is still returned, with an
        :class:`~pymc_dp.errors.UncertifiedTraceWarning` naming what it does not cover
        (:func:`pymc_dp.to_netcdf` refuses to write such a trace).

        Raises
        ------
        KeyError
            If the trace carries no ledger.

        Warns
        -----
        UncertifiedTraceWarning
            If the trace holds content its certificate does not cover, or has no certificate.
        """
        if LEDGER_ATTR in idata.attrs:
            ledger = cls.from_json(str(idata.attrs[LEDGER_ATTR]))
        elif LEDGER_GROUP in idata.children:
            ledger = cls.from_dataset(idata[LEDGER_GROUP].to_dataset())
        else:
            raise KeyError("this trace carries no privacy ledger")
        extra = uncertified(idata)
        if extra:
            warnings.warn(
                "the ledger no longer covers this trace: it holds "
                + "; ".join(extra)
                + (
                    ". Delete what was added (del idata[group]), or use pymc_dp's own "
                    "functions (pymc_dp.sample_posterior_predictive); pymc_dp.to_netcdf "
                    "refuses to write it as it is."
                    if is_certified(idata)
                    else "."
                ),
                UncertifiedTraceWarning,
                stacklevel=2,
            )
        return ledger

    def attach(self, idata: xr.DataTree) -> xr.DataTree:
        """Store the ledger in ``idata`` (group and root attribute), in place; returns it.

        Attaching a ledger does not certify a trace (:mod:`pymc_dp.certificate`): only
        :func:`pymc_dp.sample` does, on the trace it has stripped. A trace that was certified
        before is no longer covered once another ledger is attached.
        """
        idata[LEDGER_GROUP] = self.to_dataset()
        idata.attrs[LEDGER_ATTR] = self.to_json()
        return idata

    def copy(self) -> PrivacyLedger:
        """A new in-memory ledger with the same budget, events and session record."""
        ledger = PrivacyLedger(
            budget=self.budget, events=self._events, tight_budget=self.tight_budget
        )
        ledger.session = self.session
        return ledger

    def __len__(self) -> int:
        return len(self._events)

    def __repr__(self) -> str:
        budget = "none" if self.budget is None else f"({self.budget[0]:g}, {self.budget[1]:g})"
        caveat = "" if self.guaranteed else ", NOT A GUARANTEE (unverified assumption)"
        return (
            f"PrivacyLedger(events={len(self)}, epsilon={self.epsilon:g}, "
            f"delta={self.delta:g}, budget={budget}, composition={self.composition}{caveat})"
        )


@dataclass(frozen=True)
class _Cost:
    epsilon: float
    delta: float
    partition: str = ""


def compose(costs: Iterable[tuple[float, float, str]]) -> tuple[float, float]:
    """Total (ε, δ) of ``(epsilon, delta, partition)`` costs, as the ledger's basic totals.

    Costs add (sequential composition); costs that name the same non-empty partition read
    disjoint records and contribute their largest ε and δ (parallel composition).
    (:func:`pymc_dp.accounting.basic_composition`.)
    """
    return basic_composition(_Cost(*cost) for cost in costs)


def _parse_budget(budget: float | tuple[float, float] | None) -> tuple[float, float] | None:
    if budget is None:
        return None
    if isinstance(budget, tuple | list):
        eps, delta = budget
    else:
        eps, delta = budget, 0.0
    return validate_epsilon(eps, "budget epsilon"), validate_delta(delta, "budget delta")
