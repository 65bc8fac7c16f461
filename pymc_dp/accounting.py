"""Composition: the total (ε, δ) of a ledger's events, by basic and by tight accounting.

Accountants read events; mechanisms never compute totals (after dp-accounting's ``DpEvent``).
This module reads :class:`~pymc_dp.ledger.PrivacyEvent` objects (by their fields only: it
imports nothing from the ledger) and answers one question: for which ε is the sequence of
releases (ε, δ)-differentially private at a given δ? :func:`epsilon_at` returns the smallest ε
that any of five valid accountings gives, and which one gave it (:class:`Composition`).

Accountings
-----------
``basic``
    Basic sequential composition (Dwork & Roth 2014, Thm 3.16; Foulds et al. 2016, Thm 1):
    epsilons add and deltas add; events declaring the same ``partition`` contribute their
    largest ε and δ (parallel composition: McSherry 2009, Thm 4). Valid at δ whenever the
    deltas add up to at most δ, for every event, whatever its mechanism. The only accounting
    at δ = 0 (pure DP), and the only one for a ledger mixing neighbouring relations.
``advanced``
    Kairouz, Oh & Viswanath (2015), "The Composition Theorem for Differential Privacy":
    k-fold adaptive composition of (ε₀, δ₀)-DP mechanisms. When every release has the same
    (ε₀, δ₀), the exact optimum (Theorem 3.3): the composition is (ε_g, 1 − (1 − δ₀)^k
    (1 − δ'(ε_g)))-DP with

        δ'(ε_g) = Σ_{ℓ=0}^{k} C(k, ℓ) p^{k−ℓ} (1 − p)^ℓ · max(0, 1 − e^{ε_g − (k−2ℓ)ε₀}),
        p = e^{ε₀} / (1 + e^{ε₀}),

    the hockey-stick divergence of k independent randomized responses, which dominate every
    ε₀-DP mechanism (their proof of Thm 3.3); at ε_g = (k − 2i)ε₀ this is the theorem's δ_i,
    and between those points it is the same dominating pair's exact δ (Murtagh & Vadhan 2016,
    Thm 1.5). ε_g is found by bisection on a fixed bracket, rounded up (up to 10⁵ releases).
    Otherwise the heterogeneous bound (Theorem 3.5): (ε̃, 1 − (1 − δ̃) Π_i (1 − δ_i))-DP with

        ε̃ = min{ Σ ε_i,
                 Σ ε_i tanh(ε_i/2) + sqrt(2 Σ ε_i² · log(e + sqrt(Σ ε_i²)/δ̃)),
                 Σ ε_i tanh(ε_i/2) + sqrt(2 Σ ε_i² · log(1/δ̃)) }

    (ε tanh(ε/2) = ε(e^ε − 1)/(e^ε + 1)). Used for every identified event at its recorded
    (ε, δ).
``pld``
    Privacy loss distributions (dp-accounting's ``dp_accounting.pld``): each Laplace event
    is the PLD of the Laplace mechanism with parameter ``noise_scale / sensitivity``
    (``from_laplace_mechanism``, the PLD of ``dp_accounting.LaplaceDpEvent``); each Gaussian
    event the PLD of the Gaussian mechanism with standard deviation ``noise_scale /
    sensitivity`` at sensitivity 1 (``from_gaussian_mechanism``, the PLD of
    ``dp_accounting.GaussianDpEvent``: exact for the Gaussian shift, which dominates the
    multivariate Gaussian mechanism of L2 sensitivity Δ₂); every other
    identified event is the pessimistic PLD of an arbitrary (ε, δ)-DP mechanism
    (``from_privacy_parameters``: the dominating pair of Kairouz et al.). The PLDs are
    composed by FFT; ε(δ) is read off the composed PLD. Every PLD is a *pessimistic*
    discretisation on a grid of interval h (connect-the-dots for Laplace), so the figure is
    an upper bound on the exact one; the rounding adds less than h per composed release (at
    most k·h in all; in practice far less). h = max(ε_min/100, (16·sqrt(Σ k ε²) + 2 ε_max)/2·10⁵)
    with ε per release: exact for a homogeneous ledger of (ε, δ) events, and at most ~2·10⁵
    grid points.
``rdp``
    Rényi DP (dp-accounting's ``dp_accounting.rdp.RdpAccountant`` with
    ``LaplaceDpEvent(noise_multiplier = noise_scale / sensitivity)`` and
    ``GaussianDpEvent(noise_multiplier = noise_scale / sensitivity)``, its default orders and
    its RDP-to-DP conversion) for the Laplace and Gaussian events; every other event is added
    by basic composition (below).
``bounded-range``
    Dong, Durfee & Rogers (2020), "Optimal Differential Privacy Composition for Exponential
    Mechanisms", Proposition 4: an ε-bounded-range (ε-BR) mechanism has a privacy loss that
    ranges, for each neighbouring pair and each history, over an interval of length ε, with
    conditional mean at most m(ε) = ε/(1 − e^{−ε}) − 1 − log(ε/(1 − e^{−ε})) (≤ ε²/8).
    Adaptive composition of ε_i-BR mechanisms is then (ε', δ)-DP with

        ε' = min{ Σ ε_i,  Σ m(ε_i) + sqrt(½ Σ ε_i² · log(1/δ)) }

    (Azuma–Hoeffding on the martingale of the privacy losses). Pure ε-DP events enter the
    same sum with mean ε tanh(ε/2) and a loss in [−ε, ε] (range 2ε): that is the last term of
    Kairouz et al.'s Thm 3.5, and the mixed sum is the concentration bound of Cesar & Rogers
    (2021, "Bounding, Concentrating, and Truncating"). Applies when the ledger holds an
    exponential-mechanism event and every event is pure (δ = 0).

Which events are identified (default deny)
------------------------------------------
An event is accounted tightly only if its mechanism is recognised *and* its fields are
consistent with that mechanism; otherwise it is accounted by basic composition only, whatever
the rest of the ledger (its index is in ``Composition.basic_only``). An event stands for
``compositions`` = k ≥ 1 identical adaptive releases, each costing (ε/k, δ/k) (k = 1 unless
the route recorded more).

* ``"laplace"`` with δ = 0, a finite ``noise_scale`` b > 0 and no temperature, where
  sensitivity/b ≤ ε/k (the recorded ε covers the noise actually drawn; OpenDP only nudges b
  up): Laplace noise of scale b on a statistic of L1 sensitivity Δ under the event's
  neighbouring relation. Its privacy loss is that of one Laplace shift of Δ/b (the
  multivariate case is dominated by it: dp-accounting's ``LaplaceDpEvent``).
* ``"gaussian"`` with 0 < δ < 1, a finite ``noise_scale`` σ > 0 and no temperature, where
  the Gaussian mechanism of noise multiplier σ/Δ₂ (Δ₂ = ``sensitivity``, L2) is
  (ε/k, δ/k)-DP by the exact analytic Gaussian curve (Balle & Wang 2018, "Improving the
  Gaussian Mechanism for Differential Privacy", Theorem 8:
  δ(ε) = Φ(Δ₂/(2σ) − εσ/Δ₂) − e^ε Φ(−Δ₂/(2σ) − εσ/Δ₂)) and, when ``rho`` is recorded,
  ρ/k ≥ Δ₂²/(2σ²): the recorded figures cover the noise actually drawn. Its privacy loss
  is that of one Gaussian shift of Δ₂/σ (dp-accounting's ``GaussianDpEvent``).
* ``"ops"`` and ``"gibbs-exponential"`` with δ = 0, no noise scale and a temperature T ≥ 1,
  where ε/k ≥ 2Δ/T (Δ = ``sensitivity``, the log-likelihood bound): posterior sampling at
  temperature T (:mod:`pymc_dp.mechanisms.exponential`). Every such release samples
  exp(u(X, θ)/T)·base(θ) with a utility whose difference between neighbours,
  u(X, θ) − u(X', θ), lies in an interval of width w (2Δ for one posterior draw or one Gibbs
  update, Foulds et al. 2016 eq. 14 and 19–20; the sum of its updates' widths for a Gibbs
  sweep), and the event's recorded ε is the sum of w/T over its releases. The privacy loss of
  such a draw is (u(X, θ) − u(X', θ))/T − log(Z(X)/Z(X')): it ranges over an interval of
  length w/T, so each release is (w/T)-BR — the recorded ε is a bounded-range parameter, not
  only a DP one — and bounded range adds under composition. ``assumes_convergence`` events
  (the last draw of an MCMC chain) are bounded-range only if the chain converged: the flag is
  carried into the result.
* ``"metropolis"`` (temperature T ≥ 1 and ε/k ≥ 2Δ/T) and ``"gibbs_posterior"`` (k = 1): their
  recorded (ε, δ) is an (ε, δ)-DP guarantee per release and nothing finer is used (advanced
  and PLD composition of (ε, δ)-DP mechanisms).
* Anything else — another mechanism name, an inconsistent field, a bare cost passed to
  :meth:`~pymc_dp.PrivacyLedger.check` — is accounted by basic composition only.

Unidentified events in a tight accounting. Let U be the unidentified events, with ε_U and δ_U
their basic totals, and A the others. A tight accounting gives ε_A(δ − δ_U) + ε_U. Proof:
every (ε_u, δ_u)-DP mechanism is dominated by a pair of Kairouz et al.'s four-point
distributions, and the adaptive composition of dominated mechanisms is dominated by the
product of the dominating pairs (Zhu, Dong & Wang 2022, Thm 10). For product pairs,
H_{e^{a+b}}(P₁×P₂ ‖ Q₁×Q₂) ≤ H_{e^a}(P₁ ‖ Q₁) + H_{e^b}(P₂ ‖ Q₂): write P_j = P'_j + R_j with
P'_j ≤ e^{a_j} Q_j pointwise and R_j ≥ 0 of mass H_j; then P₁×P₂(S) ≤ e^{a+b} Q₁×Q₂(S) + H₁ + H₂.
With A's accounting for (P₁, Q₁) and basic composition for U's product (P₂, Q₂), the
bound follows. For the bounded-range accounting (a martingale argument, not a dominating
pair) U must be pure: then each of U's losses is at most ε_u almost surely, and the total
loss is at most A's plus ε_U.

Leaving the largest releases to basic composition. The same product bound lets any identified
events be accounted like unidentified ones (added by basic composition, their deltas spent
first) and the rest tightly: a few large releases beside a long chain of small ones cost
their sum plus the chain's tight figure, where composing all of them tightly would not gain.
Every accounting tries, for each per-release ε t, leaving the releases of ε >= t to basic
composition, and keeps the smallest figure (the PLD, which is costly, only with no split and
with the split best for advanced composition; bounded range only when every event is pure).

Partitions (parallel composition), for every accounting. Events that declare the same
non-empty ``partition`` read disjoint parts of the records, one part each, and a neighbouring
change cannot move a record across parts (the ledger's definition). Fix one neighbouring pair
(X, X'). The records that differ lie in one part of each partition, so within a partition at
most one event — the one reading that part — has different output distributions on X and X'
given the past; every other event of the partition has the same distribution on both (zero
privacy loss) and contributes nothing to any bound above (an identity pair in a product; a
zero increment in the martingale). So for that pair the ledger is the events outside
partitions plus at most one event per partition, and each partition can be replaced by one
*representative* that dominates each of its events:

* all its events alike (same mechanism, per-release (ε, δ), k and noise): any one of them;
* all single Laplace releases: the smallest noise multiplier b/Δ with the largest ε (Laplace
  shifts are ordered, a smaller b/Δ dominates: Dong, Roth & Su 2022, log-concave noise);
* all single Gaussian releases: the smallest noise multiplier σ/Δ₂ with the largest (ε, δ)
  (Gaussian shifts are ordered in the same way: μ-GDP with μ = Δ₂/σ, Dong, Roth & Su 2022);
* any unidentified event: an unidentified (max ε, max δ) (basic composition);
* otherwise a generic (max ε, max δ)-DP release (each event is (ε_i, δ_i)-DP) whose
  martingale terms (for bounded range) are the largest mean bound and the largest sum of
  squared ranges among its events.

Every bound above is monotone under this domination (a product of dominating pairs; Thm 3.3
and 3.5 increasing in each ε_i, δ_i; the Azuma sum increasing in each term), so the bound with
representatives holds for every neighbouring pair, whichever event of each partition it
touches. A representative that is not one of its events (a generic or unidentified one)
loses their structure (k Gibbs sweeps become one release; a Laplace PLD becomes the (ε, δ)
pair), so then every accounting is also run with all events in sequence — always valid: the
parallel bound only improves on it — and the smaller figure is kept.

What this does not cover. Every figure is a composition theorem for releases whose mechanisms
and privacy parameters are fixed in advance (the queries themselves may be chosen adaptively
from earlier outputs). A data holder who picks the next analysis's ε after seeing earlier
results makes the budget check a privacy filter (Rogers, Roth, Ullman & Vadhan 2016); basic
composition is a valid filter, the tight accountings are not known to be without
modification (Whitehouse et al. 2023 give fully adaptive versions of advanced composition).
So a ledger's budget is checked by basic composition unless it is created with
``tight_budget=True``, and a session's always is. The accountings also assume one
neighbouring relation for every event (checked: a mixed ledger is accounted by basic
composition only).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import special

__all__ = [
    "DEFAULT_DELTA",
    "METHODS",
    "Composition",
    "basic_composition",
    "epsilon_at",
]

DEFAULT_DELTA = 1e-6
"""δ at which a ledger without a budget reports its tight total (traces, JSON)."""
METHODS: tuple[str, ...] = ("basic", "advanced", "pld", "rdp", "bounded-range")
"""The accountings, in the order in which ties are broken."""

LAPLACE_MECHANISMS = frozenset({"laplace"})
GAUSSIAN_MECHANISMS = frozenset({"gaussian"})
EXPONENTIAL_MECHANISMS = frozenset({"ops", "gibbs-exponential"})
DP_MECHANISMS = frozenset({"metropolis", "gibbs_posterior"})

_CONSISTENCY = 1e-9  # relative slack when checking an event's ε against its noise or T
_PLD_GRID_POINTS = 2e5  # target size of the composed PLD's grid
_PLD_MAX_RELEASES = 10**6  # above this many releases the PLD is not computed
_KOV_EXACT_MAX_RELEASES = 10**5  # above this the homogeneous case uses Theorem 3.5
_BISECTION_STEPS = 100


@dataclass(frozen=True)
class Composition:
    """The tightest valid total ε of a sequence of releases at one δ, and how it was found.

    Made by :func:`epsilon_at` (and :meth:`pymc_dp.PrivacyLedger.epsilon_at`). The
    releases are (``epsilon``, ``delta``)-DP under the events' neighbouring relation, by the
    accounting ``method``.

    Attributes
    ----------
    epsilon : float
        The smallest ε over the valid accountings (``inf`` when none is valid at ``delta``:
        the events' own deltas exceed it).
    delta : float
        The δ asked for.
    method : str
        The accounting that gave ``epsilon`` (one of :data:`METHODS`; ties go to the
        earlier one, so ``"basic"`` when nothing is tighter).
    per_method : Mapping[str, float]
        ε of every accounting that applies to these events (read-only); ``"basic"`` is always
        present (``inf`` when the deltas add up to more than ``delta``).
    basic_epsilon, basic_delta : float
        The basic totals (sequential, parallel within partitions): what
        :attr:`~pymc_dp.PrivacyLedger.epsilon` and ``delta`` report.
    basic_only : tuple of int
        Indices of the events accounted by basic composition only (mechanism not identified,
        or inconsistent fields); all of them when the tight accountings do not apply.
    assumes_convergence : bool
        True when an event's guarantee assumes its MCMC chain converged.
    unverified_assumptions : tuple of str
        The distinct ``unverified_assumption`` of the events: the figure holds only under
        them (empty: a guarantee).
    notes : tuple of str
        Why an accounting did not apply, and the PLD's discretisation.
    """

    epsilon: float
    delta: float
    method: str
    per_method: Mapping[str, float] = field(hash=False)
    basic_epsilon: float
    basic_delta: float
    basic_only: tuple[int, ...] = ()
    assumes_convergence: bool = False
    unverified_assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_method", MappingProxyType(dict(self.per_method)))

    @property
    def guaranteed(self) -> bool:
        """False when the figure holds only under an unverified assumption."""
        return not self.unverified_assumptions

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (infinite figures as None)."""
        return {
            "epsilon": _finite_or_none(self.epsilon),
            "delta": self.delta,
            "method": self.method,
            "per_method": {k: _finite_or_none(v) for k, v in self.per_method.items()},
            "basic_epsilon": self.basic_epsilon,
            "basic_delta": self.basic_delta,
            "basic_only": list(self.basic_only),
            "assumes_convergence": self.assumes_convergence,
            "unverified_assumptions": list(self.unverified_assumptions),
            "notes": list(self.notes),
        }


def basic_composition(events: Iterable) -> tuple[float, float]:
    """(ε, δ) by basic composition: events add; events sharing a partition contribute their
    largest ε and δ (parallel composition).

    ``events`` are anything with ``epsilon``, ``delta`` and ``partition`` attributes
    (:class:`~pymc_dp.ledger.PrivacyEvent`, or a bare cost).
    """
    sequential_eps, sequential_delta = [], []
    parallel: dict[str, list] = {}
    for event in events:
        if event.partition:
            parallel.setdefault(event.partition, []).append(event)
        else:
            sequential_eps.append(event.epsilon)
            sequential_delta.append(event.delta)
    for group in parallel.values():
        sequential_eps.append(max(e.epsilon for e in group))
        sequential_delta.append(max(e.delta for e in group))
    return math.fsum(sequential_eps), math.fsum(sequential_delta)


def epsilon_at(events: Sequence, delta: float) -> Composition:
    """The tightest valid total ε of ``events`` at ``delta``, and which accounting gave it.

    The minimum over the accountings of the module docstring (basic, advanced, PLD, RDP,
    bounded range) that apply to the events. Never larger than basic composition; at
    ``delta`` = 0 only basic composition (pure DP) is used.

    Parameters
    ----------
    events : sequence of PrivacyEvent
        The releases, in order (bare costs with ``epsilon``, ``delta`` and ``partition`` are
        accepted and accounted by basic composition only).
    delta : float
        Target δ, 0 <= δ < 1.

    Returns
    -------
    Composition
        Frozen: ``epsilon``, ``delta``, ``method`` and every accounting's figure.

    Raises
    ------
    ValueError
        If ``delta`` is not in [0, 1).

    Examples
    --------
    >>> from pymc_dp.ledger import PrivacyEvent
    >>> laplace = PrivacyEvent(mechanism="laplace", epsilon=1.0, delta=0.0, sensitivity=1.0,
    ...                        neighbouring="add-remove-one", variables=("y",),
    ...                        noise_backend="opendp", noise_scale=1.0)
    >>> result = epsilon_at([laplace] * 100, 1e-6)
    >>> result.method, round(result.epsilon, 1), result.per_method["basic"]
    ('pld', 71.5, 100.0)
    """
    delta = float(delta)
    if not math.isfinite(delta) or not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must satisfy 0 <= delta < 1, got {delta!r}")
    events = tuple(events)
    try:
        hash(events)
    except TypeError:  # an event with an unhashable field: not cached
        return _epsilon_at.__wrapped__(events, delta)
    return _epsilon_at(events, delta)


# --- the accounting ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Slot:
    """One accounted unit: an event, or the representative of a partition.

    ``epsilon`` and ``delta`` are totals over ``compositions`` identical releases.
    """

    kind: str  # "laplace" | "gaussian" | "exponential" | "dp" | "unknown"
    epsilon: float
    delta: float
    compositions: int = 1
    noise_multiplier: float | None = None  # laplace: b / Δ; gaussian: σ / Δ₂ of one release
    br_terms: tuple[float, float] | None = None  # (mean, Σ range²) if not the kind's own

    @property
    def martingale_terms(self) -> tuple[float, float]:
        """(bound on the summed conditional means, sum of squared ranges) of the privacy
        losses of the slot's releases: bounded range (ε-BR: m(ε), ε²) for exponential
        mechanisms, pure DP (ε tanh(ε/2), (2ε)²) otherwise."""
        if self.br_terms is not None:
            return self.br_terms
        e, n = self.release_epsilon, self.compositions
        if self.kind == "exponential":
            return n * _br_mean(e), n * e * e
        return n * e * math.tanh(e / 2.0), n * 4.0 * e * e

    @property
    def release_epsilon(self) -> float:
        return self.epsilon / self.compositions

    @property
    def release_delta(self) -> float:
        return self.delta / self.compositions


@lru_cache(maxsize=128)
def _epsilon_at(events: tuple, delta: float) -> Composition:
    basic_eps, basic_delta = basic_composition(events)
    assumptions = tuple(
        dict.fromkeys(
            getattr(e, "unverified_assumption", "")
            for e in events
            if getattr(e, "unverified_assumption", "")
        )
    )
    common = {
        "delta": delta,
        "basic_epsilon": basic_eps,
        "basic_delta": basic_delta,
        "assumes_convergence": any(getattr(e, "assumes_convergence", False) for e in events),
        "unverified_assumptions": assumptions,
    }
    basic = basic_eps if basic_delta <= delta else math.inf
    relations = {getattr(e, "neighbouring", None) for e in events} - {None}
    notes: list[str] = []
    if delta == 0.0:
        notes.append("δ = 0: only basic (pure-DP) composition applies")
    elif len(relations) > 1:
        notes.append(
            f"the events mix neighbouring relations {sorted(relations)}: only basic "
            "composition is used (every tight accounting assumes one relation)"
        )
    if notes or not events:
        return Composition(
            epsilon=basic,
            method="basic",
            per_method={"basic": basic},
            basic_only=tuple(range(len(events))),
            notes=tuple(notes),
            **common,
        )
    classified = [_classify(e) for e in events]
    basic_only = tuple(i for i, s in enumerate(classified) if s.kind == "unknown")
    bounded_range = any(s.kind == "exponential" for s in classified)
    slots, mixed = _slots(events, classified)
    per_method = {"basic": basic, **_tight(slots, delta, bounded_range, notes)}
    if mixed:  # a representative can lose its events' structure: also compose in sequence
        sequential = _tight(classified, delta, bounded_range, [])
        per_method = {
            m: min(per_method.get(m, math.inf), sequential.get(m, math.inf))
            for m in {*per_method, *sequential}
        }
    method = min(METHODS, key=lambda m: (per_method.get(m, math.inf), METHODS.index(m)))
    return Composition(
        epsilon=min(per_method.values()),
        method=method,
        per_method={m: per_method[m] for m in METHODS if m in per_method},
        basic_only=basic_only,
        notes=tuple(notes),
        **common,
    )


def _slots(events: tuple, classified: list[_Slot]) -> tuple[list[_Slot], bool]:
    """The slots with each partition replaced by its representative, and whether one
    representative is not one of its events (a generic or unidentified release)."""
    slots: list[_Slot] = []
    partitions: dict[str, list[_Slot]] = {}
    for event, slot in zip(events, classified, strict=True):
        if event.partition:
            partitions.setdefault(event.partition, []).append(slot)
        else:
            slots.append(slot)
    representatives = [_representative(group) for group in partitions.values()]
    mixed = any(
        r not in group for r, group in zip(representatives, partitions.values(), strict=True)
    )
    return slots + representatives, mixed


def _classify(event) -> _Slot:
    """The event's slot: its mechanism if identified and consistent, else "unknown"."""
    epsilon, delta = float(event.epsilon), float(event.delta)
    unknown = _Slot("unknown", epsilon, delta)
    mechanism = getattr(event, "mechanism", None)
    k = getattr(event, "compositions", 1)
    sensitivity = _positive(getattr(event, "sensitivity", None))
    temperature = _positive(getattr(event, "temperature", None))
    scale = _positive(getattr(event, "noise_scale", None))
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or sensitivity is None:
        return unknown
    per_release = epsilon / k
    if mechanism in LAPLACE_MECHANISMS:
        if delta == 0.0 and scale is not None and temperature is None:
            multiplier = scale / sensitivity
            if 1.0 / multiplier <= per_release * (1 + _CONSISTENCY):
                return _Slot("laplace", epsilon, 0.0, k, multiplier)
        return unknown
    if mechanism in GAUSSIAN_MECHANISMS:
        rho = getattr(event, "rho", None)
        if 0.0 < delta < 1.0 and scale is not None and temperature is None:
            multiplier = scale / sensitivity
            covered = _gaussian_delta(per_release, multiplier) <= (delta / k) * (1 + _CONSISTENCY)
            rho_ok = rho is None or (
                _positive(rho) is not None
                and float(rho) / k >= 0.5 / multiplier**2 * (1 - _CONSISTENCY)
            )
            if covered and rho_ok:
                return _Slot("gaussian", epsilon, delta, k, multiplier)
        return unknown
    if mechanism in EXPONENTIAL_MECHANISMS:
        if delta == 0.0 and scale is None and _calibrated(per_release, sensitivity, temperature):
            return _Slot("exponential", epsilon, 0.0, k)
        return unknown
    if mechanism == "metropolis" and _calibrated(per_release, sensitivity, temperature):
        return _Slot("dp", epsilon, delta, k)
    if mechanism == "gibbs_posterior" and k == 1:
        return _Slot("dp", epsilon, delta, 1)
    return unknown


def _calibrated(per_release: float, sensitivity: float, temperature: float | None) -> bool:
    """True if T >= 1 and one release's ε is at least one exponential mechanism's, 2Δ/T."""
    return (
        temperature is not None
        and temperature >= 1.0
        and per_release >= 2.0 * sensitivity / temperature * (1 - _CONSISTENCY)
    )


def _representative(group: list[_Slot]) -> _Slot:
    """One slot that dominates every event of a partition (module docstring)."""
    if len(set(group)) == 1:
        return group[0]
    epsilon = max(s.epsilon for s in group)
    delta = max(s.delta for s in group)
    kinds = {s.kind for s in group}
    if "unknown" in kinds:
        return _Slot("unknown", epsilon, delta)
    if kinds == {"laplace"} and all(s.compositions == 1 for s in group):
        return _Slot("laplace", epsilon, 0.0, 1, min(s.noise_multiplier for s in group))
    if kinds == {"gaussian"} and all(s.compositions == 1 for s in group):
        return _Slot("gaussian", epsilon, delta, 1, min(s.noise_multiplier for s in group))
    terms = [s.martingale_terms for s in group]
    return _Slot(
        "dp", epsilon, delta, 1, None, (max(t[0] for t in terms), max(t[1] for t in terms))
    )


def _tight(
    slots: list[_Slot], delta: float, bounded_range: bool, notes: list[str]
) -> dict[str, float]:
    """ε of each tight accounting that applies: known slots by it, unknown ones added, and
    the largest known releases possibly left to basic composition (module docstring)."""
    known = [s for s in slots if s.kind != "unknown"]
    unknown = [s for s in slots if s.kind == "unknown"]
    unknown_eps = math.fsum(s.epsilon for s in unknown)
    unknown_delta = math.fsum(s.delta for s in unknown)
    available = delta - unknown_delta
    if not known:
        return {}
    if available < 0:
        notes.append("the unidentified events' deltas alone exceed δ")
        return dict.fromkeys(("advanced", "pld"), math.inf)
    pure = unknown_delta == 0 and all(s.delta == 0 for s in known)
    if bounded_range and not pure:
        notes.append("bounded-range composition needs every event pure (δ = 0)")
    figures: dict[str, float] = {}

    def keep(method: str, value: float) -> None:
        figures[method] = min(figures.get(method, math.inf), value + unknown_eps)

    splits = _splits(known)
    advanced = []  # per split
    for part, rest in splits:
        rest_eps = math.fsum(s.epsilon for s in rest)
        budget = available - math.fsum(s.delta for s in rest)
        advanced.append(_advanced(part, budget) + rest_eps if budget >= 0 else math.inf)
        if budget < 0:
            continue
        keep("advanced", advanced[-1])
        noise = [s for s in part if s.kind in _NOISE_KINDS]
        if noise:
            others = [s for s in part if s.kind not in _NOISE_KINDS]
            remaining = budget - math.fsum(s.delta for s in others)
            others_eps = math.fsum(s.epsilon for s in others)
            keep(
                "rdp",
                _rdp(noise, remaining) + others_eps + rest_eps if remaining > 0 else math.inf,
            )
        if bounded_range and pure:
            keep("bounded-range", _bounded_range(part, available) + rest_eps)
    # PLD (costly): without a split, and with the split best for advanced composition
    best = splits[advanced.index(min(advanced))]
    for part, rest in dict.fromkeys([(tuple(known), ()), (tuple(best[0]), tuple(best[1]))]):
        if any(s.kind in _NOISE_KINDS for s in part) or not _homogeneous(list(part)):
            budget = available - math.fsum(s.delta for s in rest)
            if budget >= 0:
                value = _pld(list(part), budget, notes) + math.fsum(s.epsilon for s in rest)
                keep("pld", value)
    if "pld" not in figures:
        notes.append(
            "pld: not computed (every release is the same (ε, δ): advanced composition is "
            "already the exact optimum, Kairouz et al. Thm 3.3)"
        )
    return figures


def _splits(known: list[_Slot]) -> list[tuple[list[_Slot], list[_Slot]]]:
    """(accounted tightly, left to basic composition): none left, then the releases of
    ε >= t left, for every per-release ε t but the smallest (all left is basic itself)."""
    thresholds = sorted({s.release_epsilon for s in known}, reverse=True)[:-1]
    splits = [(known, [])]
    for threshold in thresholds:
        rest = [s for s in known if s.release_epsilon >= threshold]
        splits.append(([s for s in known if s.release_epsilon < threshold], rest))
    return splits


# --- advanced composition: Kairouz, Oh & Viswanath 2015 ---------------------------------------
def _advanced(slots: list[_Slot], delta: float) -> float:
    """Thm 3.3 (exact, one (ε₀, δ₀) for every release) or Thm 3.5 (heterogeneous)."""
    releases = [(s.release_epsilon, s.release_delta, s.compositions) for s in slots]
    k = sum(n for _, _, n in releases)
    if _homogeneous(slots) and k <= _KOV_EXACT_MAX_RELEASES:
        epsilon0, delta0 = max(e for e, _, _ in releases), max(d for _, d, _ in releases)
        return _kov_homogeneous(epsilon0, delta0, k, delta)
    return _kov_heterogeneous(releases, delta)


def _homogeneous(slots: list[_Slot]) -> bool:
    """True when every release has the same (ε, δ) (to 1e-12, relative)."""
    first = slots[0]
    return all(
        math.isclose(s.release_epsilon, first.release_epsilon, rel_tol=1e-12)
        and math.isclose(s.release_delta, first.release_delta, rel_tol=1e-12)
        for s in slots
    )


def _kov_homogeneous(epsilon0: float, delta0: float, k: int, delta: float) -> float:
    """Smallest ε_g (bisection on [0, kε₀], rounded up) with Theorem 3.3's δ at most delta."""
    log_keep = k * math.log1p(-delta0) if delta0 > 0 else 0.0  # log (1 − δ₀)^k
    top = k * epsilon0
    if -math.expm1(log_keep) > delta:
        return math.inf  # not even (kε₀, ·)-DP at this δ

    def fits(epsilon_g: float) -> bool:
        slack = _rr_delta(epsilon0, k, epsilon_g)
        if slack >= 1.0:  # rounding can push the bound to 1 (or just over): nothing fits
            return False
        return -math.expm1(log_keep + math.log1p(-slack)) <= delta

    if fits(0.0):
        return 0.0
    low, high = 0.0, top
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high


def _rr_delta(epsilon0: float, k: int, epsilon_g: float) -> float:
    """δ'(ε_g) of k independent ε₀ randomized responses (module docstring), in [0, 1]."""
    # losses (k − 2ℓ)ε₀ above ε_g: ℓ < (k − ε_g/ε₀)/2
    last = math.ceil((k - epsilon_g / epsilon0) / 2.0) - 1
    if last < 0:
        return 0.0
    ell = np.arange(0, min(last, k) + 1, dtype=np.float64)
    log_p, log_q = -np.logaddexp(0.0, -epsilon0), -np.logaddexp(0.0, epsilon0)  # no overflow
    log_weight = (
        special.gammaln(k + 1.0)
        - special.gammaln(ell + 1.0)
        - special.gammaln(k - ell + 1.0)
        + (k - ell) * log_p
        + ell * log_q
    )
    excess = -np.expm1(np.minimum(epsilon_g - (k - 2.0 * ell) * epsilon0, 0.0))
    return float(min(1.0, np.sum(np.exp(log_weight) * excess) * (1 + 1e-12)))  # rounded up


def _kov_heterogeneous(releases: list[tuple[float, float, int]], delta: float) -> float:
    """Theorem 3.5 with δ̃ = 1 − (1 − δ)/Π(1 − δ_i)."""
    total = math.fsum(e * n for e, _, n in releases)
    log_keep = math.fsum(n * math.log1p(-d) for _, d, n in releases if d > 0)
    if -math.expm1(log_keep) > delta:
        return math.inf
    slack = -math.expm1(math.log1p(-delta) - log_keep)  # δ̃
    if slack <= 0:
        return total
    mean = math.fsum(n * e * math.tanh(e / 2.0) for e, _, n in releases)
    squares = math.fsum(n * e * e for e, _, n in releases)
    return min(
        total,
        mean + math.sqrt(2.0 * squares * math.log(math.e + math.sqrt(squares) / slack)),
        mean + math.sqrt(2.0 * squares * math.log(1.0 / slack)),
    )


# --- bounded range: Dong, Durfee & Rogers 2020 -------------------------------------------------
def _bounded_range(slots: list[_Slot], delta: float) -> float:
    """Proposition 4, with pure-DP releases in the same Azuma–Hoeffding sum."""
    total = math.fsum(s.epsilon for s in slots)
    terms = [s.martingale_terms for s in slots]
    mean, squares = math.fsum(t[0] for t in terms), math.fsum(t[1] for t in terms)
    return min(total, mean + math.sqrt(0.5 * squares * math.log(1 / delta)))


def _br_mean(epsilon: float) -> float:
    """m(ε) = ε/(1 − e^{−ε}) − 1 − log(ε/(1 − e^{−ε})), an upper bound (≤ ε²/8)."""
    bound = epsilon * epsilon / 8.0
    if epsilon < 1e-2:
        return bound
    excess = epsilon / -math.expm1(-epsilon) - 1.0
    return min(bound, (excess - math.log1p(excess)) * (1 + 1e-9))


# --- dp-accounting: PLD and RDP ------------------------------------------------------------------
@cache
def _dp_accounting():
    import dp_accounting
    from dp_accounting.pld import common, privacy_loss_distribution
    from dp_accounting.rdp import rdp_privacy_accountant

    return dp_accounting, privacy_loss_distribution, common, rdp_privacy_accountant


def _pld(slots: list[_Slot], delta: float, notes: list[str]) -> float:
    """Compose the slots' PLDs (Laplace: exact; others: the (ε, δ) dominating pair).

    ∞ (not applicable) when dp-accounting's arithmetic fails, e.g. overflows for per-release
    ε in the hundreds: the other accountings, basic at least, still apply."""
    try:
        return _pld_figure(slots, delta, notes)
    except (OverflowError, FloatingPointError, ValueError) as error:
        notes.append(f"pld: not computed ({type(error).__name__} in dp-accounting)")
        return math.inf


def _pld_figure(slots: list[_Slot], delta: float, notes: list[str]) -> float:
    releases = sum(s.compositions for s in slots)
    if releases > _PLD_MAX_RELEASES:
        notes.append(f"pld: not computed for {releases} releases (more than 10^6)")
        return math.inf
    _, pld, common, _ = _dp_accounting()
    per_release = [s.release_epsilon for s in slots]
    spread = math.sqrt(math.fsum(s.compositions * s.release_epsilon**2 for s in slots))
    interval = max(min(per_release) / 100.0, (16.0 * spread + 2.0 * max(per_release)) / 2e5)
    composed = None
    for slot in _grouped(slots):
        if slot.kind == "laplace":
            one = pld.from_laplace_mechanism(
                slot.noise_multiplier, value_discretization_interval=interval
            )
        elif slot.kind == "gaussian":
            one = pld.from_gaussian_mechanism(
                slot.noise_multiplier, sensitivity=1.0, value_discretization_interval=interval
            )
        else:
            parameters = common.DifferentialPrivacyParameters(
                slot.release_epsilon, slot.release_delta
            )
            one = pld.from_privacy_parameters(parameters, value_discretization_interval=interval)
        if slot.compositions > 1:
            one = one.self_compose(slot.compositions)
        composed = one if composed is None else composed.compose(one)
    notes.append(f"pld: pessimistic, discretisation interval {interval:.3g}")
    return float(composed.get_epsilon_for_delta(delta))


def _rdp(slots: list[_Slot], delta: float) -> float:
    """dp-accounting's RDP accountant on ``LaplaceDpEvent(noise_multiplier)`` and
    ``GaussianDpEvent(noise_multiplier)`` (∞ when its arithmetic fails, as :func:`_pld`)."""
    try:
        return _rdp_figure(slots, delta)
    except (OverflowError, FloatingPointError, ValueError):
        return math.inf


def _rdp_figure(slots: list[_Slot], delta: float) -> float:
    dp_accounting, _, _, rdp = _dp_accounting()
    accountant = rdp.RdpAccountant()
    for slot in _grouped(slots):
        event = (
            dp_accounting.GaussianDpEvent(noise_multiplier=slot.noise_multiplier)
            if slot.kind == "gaussian"
            else dp_accounting.LaplaceDpEvent(noise_multiplier=slot.noise_multiplier)
        )
        accountant.compose(event, slot.compositions)
    return float(accountant.get_epsilon(delta))


# --- helpers ---------------------------------------------------------------------------------
_NOISE_KINDS = frozenset({"laplace", "gaussian"})
"""Slot kinds whose exact privacy loss dp-accounting knows (PLD and RDP)."""


def _gaussian_delta(epsilon: float, multiplier: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with σ/Δ₂ = ``multiplier`` (Balle & Wang 2018,
    Thm 8): Φ(1/(2m) − εm) − e^ε Φ(−1/(2m) − εm), computed with log-CDFs (no overflow)."""
    mu = 1.0 / multiplier
    first = special.log_ndtr(mu / 2.0 - epsilon / mu)
    second = epsilon + special.log_ndtr(-mu / 2.0 - epsilon / mu)
    if second >= first:
        return 0.0
    return float(math.exp(first) * -math.expm1(second - first))


def _grouped(slots: list[_Slot]) -> list[_Slot]:
    """Slots with the same release merged into one with the summed compositions (so that
    identical releases are composed by one ``self_compose``)."""
    counts: dict[tuple, int] = {}
    for s in slots:
        key = (s.kind, s.release_epsilon, s.release_delta, s.noise_multiplier)
        counts[key] = counts.get(key, 0) + s.compositions
    return [
        _Slot(kind, epsilon * n, delta * n, n, multiplier)
        for (kind, epsilon, delta, multiplier), n in counts.items()
    ]


def _positive(value) -> float | None:
    """``value`` as a float if it is a finite number > 0, else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
