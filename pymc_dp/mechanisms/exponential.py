"""Calibration of posterior sampling at a temperature T >= 1 (the exponential mechanism).

Sampling a density proportional to exp(u(X, θ)/T)·base(θ) is the exponential mechanism with
utility u (McSherry & Talwar 2007; Foulds et al. 2016, §2.2 eq. 4-6 and 10, after Wang et al.
2015). Every posterior-sampling mechanism of pymc_dp is calibrated here, and nowhere else:

* :func:`calibrate_temperature` — a utility whose range moves by at most Δ when one record is
  replaced (Δ, nats: the *log-likelihood bound*; Foulds eq. 9 and 13). One release at T costs
  2Δ/T: one posterior sample (OPS, Foulds §3.1 eq. 14), one Gibbs update (§4.1 eq. 19-20), one
  private Metropolis step (App. C.1, Theorem C.1, which adds a δ). A sweep of several updates
  costs the sum of theirs. Used by :mod:`pymc_dp.mechanisms.ops`, :mod:`pymc_dp.hmm.privacy`,
  :mod:`pymc_dp.routes.tempered` and :mod:`pymc_dp.routes.hmm`.
* :func:`calibrate_temperature_tight` and :func:`tight_release_epsilon` — the same releases,
  with the budget met by the tightest valid composition at a δ > 0
  (:func:`pymc_dp.accounting.epsilon_at`: bounded-range composition of exponential
  mechanisms, Dong, Durfee & Rogers 2020; advanced composition, Kairouz, Oh & Viswanath
  2015) instead of the sum: for many releases the temperature is far lower for the same
  (ε, δ) guarantee. Used by :mod:`pymc_dp.routes.tempered` and :mod:`pymc_dp.routes.hmm`
  when a run asks for ``accounting="tight"``.
* :func:`gibbs_posterior_inverse_temperature` — the Gibbs posterior of Minami et al. (2016),
  exp(−β Σ_i ℓ(θ, x_i))·π(θ), whose loss is Lipschitz and convex and whose prior is strongly
  log-concave: no bounded Δ is needed (Theorem 7). Used by :mod:`pymc_dp.tempering`.

Both cap the temperature at 1 (β at 1): a larger budget never buys a sharpened posterior.
The closed-form calculators of the papers (:mod:`pymc_dp.theory`) build on these; these never
depend on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pymc_dp.accounting import Composition, epsilon_at
from pymc_dp.ledger import PrivacyEvent, validate_delta, validate_epsilon

__all__ = [
    "ACCOUNTINGS",
    "TemperatureCalibration",
    "TightTemperature",
    "calibrate_temperature",
    "calibrate_temperature_tight",
    "gibbs_posterior_inverse_temperature",
    "tight_release_epsilon",
]

ACCOUNTINGS = ("basic", "tight")
"""How a posterior-sampling run meets its ε: by the sum of its releases (``"basic"``, pure
ε-DP) or by the tightest valid composition at the run's δ (``"tight"``, (ε, δ)-DP)."""
_FITS = 1e-12  # relative slack of a total against its target (as the ledger's budget check)


@dataclass(frozen=True)
class TemperatureCalibration:
    """The temperature of n releases that together spend at most a target ε.

    Made by :func:`calibrate_temperature`; all costs in nats.

    Attributes
    ----------
    cost_at_unit_temperature : float
        ε of one release at T = 1 (2Δ for one exponential-mechanism release; the weight of one
        Gibbs sweep).
    target_epsilon : float
        The ε asked for, for all n releases together.
    n_releases : int
        n >= 1, the releases that compose sequentially.
    temperature : float
        T = max(1, n·cost/ε) >= 1.
    epsilon : float
        The ε actually spent, n·cost/T: the target when T > 1, n·cost (< target) when T is
        capped at 1. This, not the target, is what a ledger is charged.

    Examples
    --------
    >>> from pymc_dp.mechanisms import calibrate_temperature
    >>> calibration = calibrate_temperature(4.0, 1.0, 3)  # 2Δ = 4, three draws at ε = 1
    >>> calibration.temperature, calibration.epsilon
    (12.0, 1.0)
    """

    cost_at_unit_temperature: float
    target_epsilon: float
    n_releases: int
    temperature: float
    epsilon: float

    @property
    def release_epsilon(self) -> float:
        """ε of one release at T: cost/T."""
        return self.cost_at_unit_temperature / self.temperature

    @property
    def uncapped_temperature(self) -> float:
        """n·cost/ε: the T that would spend exactly the target (below 1 when capped)."""
        return self.n_releases * self.cost_at_unit_temperature / self.target_epsilon

    @property
    def capped(self) -> bool:
        """True when T was raised to 1, so less than the target is spent."""
        return self.uncapped_temperature < 1.0


def calibrate_temperature(
    cost_at_unit_temperature: float, epsilon: float, n_releases: int = 1
) -> TemperatureCalibration:
    """Temperature T >= 1 at which n releases together spend at most ε, and what they spend.

    Guarantee: a release that costs c at T = 1 costs c/T at temperature T — the exponential
    mechanism Pr(θ | X) ∝ exp(u(X, θ)/T) with a utility of sensitivity Δ is (2Δ/T)-DP
    (Foulds et al. 2016, §3.1 eq. 14: one posterior sample Pr(θ, X)^{1/T} at T = 2Δ/ε is
    ε-DP; §4.1 eq. 19-20: one Gibbs update of block l at T costs 2Δ_l/T, and the updates of a
    chain compose, Theorem 1). So n releases at

        T = max(1, n·c/ε)

    are (n·c/T, 0)-DP under replace-one neighbours, by sequential composition. T is capped at
    1: a budget above n·c would need T < 1, a posterior sharper than the exact one, which is
    never produced; the exact posterior is used and only n·c is charged (Foulds §2.2: "cap ε
    at 2Δ"). Private Metropolis (App. C.1, Theorem C.1) is calibrated the same way, per step,
    with its δ accounted separately.

    Parameters
    ----------
    cost_at_unit_temperature : float
        c >= 0, in nats: ε of one release at T = 1 — 2Δ for one exponential-mechanism release
        (Δ the log-likelihood bound of the utility), or the weight of one Gibbs sweep (the sum
        of its updates' 2Δ_l). Data-independent.
    epsilon : float
        Target ε > 0 for all n releases together, in nats.
    n_releases : int, default 1
        n >= 1: releases that compose sequentially (draws, chains, sweeps or steps).

    Returns
    -------
    TemperatureCalibration
        Frozen: ``temperature`` T >= 1 and ``epsilon`` = n·c/T <= ε, the ε to charge.

    Raises
    ------
    ValueError
        If c is not finite or is negative (an untruncated model has Δ = ∞), ε is not finite
        and > 0, or n is not an integer >= 1.

    Examples
    --------
    >>> from pymc_dp.mechanisms import calibrate_temperature
    >>> calibrate_temperature(4.0, 1.0, 3).temperature   # 2Δ = 4, three draws at ε = 1
    12.0
    >>> calibrate_temperature(0.25, 1.0, 2).epsilon       # capped: T = 1 spends 0.5 < 1
    0.5
    """
    cost = float(cost_at_unit_temperature)
    if not math.isfinite(cost) or cost < 0:
        raise ValueError(
            "the cost of one release at T = 1 must be a finite number >= 0, got "
            f"{cost_at_unit_temperature!r}; an untruncated model has an unbounded log-likelihood"
        )
    target = validate_epsilon(epsilon)
    if (
        isinstance(n_releases, bool)
        or not isinstance(n_releases, int | np.integer)
        or n_releases < 1
    ):
        raise ValueError(f"n_releases must be an integer >= 1, got {n_releases!r}")
    n = int(n_releases)
    temperature = max(1.0, n * cost / target)
    return TemperatureCalibration(cost, target, n, temperature, n * cost / temperature)


def gibbs_posterior_inverse_temperature(
    epsilon: float, delta: float, lipschitz: float, strong_convexity: float
) -> float:
    """Largest β <= 1 at which one draw of a Gibbs posterior is (ε, δ)-DP.

    Guarantee: Minami et al. (2016), Theorem 7 with Theorem 5 — for a loss θ ↦ ℓ(θ, x) that is
    non-negative, convex and L-Lipschitz for every record x, and a prior π that is
    m_π-strongly log-concave on Θ = ℝ^d, one exact draw of G_β ∝ exp(−β Σ_i ℓ(θ, x_i))·π(θ)
    is (ε, δ)-DP under replace-one neighbours if eq. 6 is at most δ. With a = 2L²β²/m_π and
    c = log(1/δ), that holds iff a <= (√(ε + c) − √c)², so (the exact inversion of eq. 6, a
    correction of the paper's Corollary 8, which is valid only for ε <= ~1)

        β* = (√(m_π/2)/L)·ε / (√(ε + c) + √c),

    capped at 1 (Theorem 7 assumes β ∈ (0, 1]; T = 1/β >= 1, never sharpened). An MCMC draw
    is only approximate (Minami et al., Proposition 12).

    Parameters
    ----------
    epsilon : float
        ε > 0, nats.
    delta : float
        The DP δ, 0 < δ < 1.
    lipschitz : float
        L > 0, in nats per unit of θ (e.g. √(r² + 1) for the logistic loss with intercept and
        features clipped to norm r).
    strong_convexity : float
        m_π > 0, the strong-convexity constant of −log π (1/σ² for N(0, σ²I)).

    Returns
    -------
    float
        β in (0, 1].

    Raises
    ------
    ValueError
        If ε, L or m_π is not finite and > 0, or δ is not in (0, 1).

    Examples
    --------
    >>> from pymc_dp.mechanisms import gibbs_posterior_inverse_temperature
    >>> beta = gibbs_posterior_inverse_temperature(1.0, 1e-5, lipschitz=1.0, strong_convexity=1.0)
    >>> round(beta, 4)
    0.102
    """
    epsilon = validate_epsilon(epsilon)
    delta = validate_delta(delta, positive=True)
    values = {"lipschitz": lipschitz, "strong_convexity": strong_convexity}
    for name, value in values.items():
        if not math.isfinite(float(value)) or float(value) <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    lipschitz, m = float(lipschitz), float(strong_convexity)
    c = math.log(1.0 / delta)
    return min(
        1.0, math.sqrt(m / 2.0) / lipschitz * epsilon / (math.sqrt(epsilon + c) + math.sqrt(c))
    )


# --- tight accounting: the same releases at a lower temperature ------------------------------
@dataclass(frozen=True)
class TightTemperature:
    """The lowest temperature at which a run's releases compose to a target (ε, δ).

    Made by :func:`calibrate_temperature_tight`.

    Attributes
    ----------
    temperature : float
        T >= 1: the lowest temperature found (to a relative ``rtol``) whose events compose, by
        :func:`pymc_dp.accounting.epsilon_at`, to at most the target ε at δ.
    basic_temperature : float
        The temperature of basic composition for the same target
        (:func:`calibrate_temperature`): the releases' ε add up to the target.
    target_epsilon, delta : float
        The (ε, δ) asked for.
    composition : pymc_dp.accounting.Composition
        ``epsilon_at(events_at(temperature), delta)``: ``composition.epsilon`` <= target
        (the guarantee), ``composition.method`` the accounting that gave it,
        ``composition.basic_epsilon`` the basic total of the same events (what the ledger's
        :attr:`~pymc_dp.PrivacyLedger.epsilon` will show).
    """

    temperature: float
    basic_temperature: float
    target_epsilon: float
    delta: float
    composition: Composition

    @property
    def epsilon(self) -> float:
        """The tight total at δ of the events at ``temperature`` (<= the target)."""
        return self.composition.epsilon

    @property
    def gain(self) -> float:
        """basic_temperature / temperature >= 1: how much less the posterior is flattened."""
        return self.basic_temperature / self.temperature


def calibrate_temperature_tight(
    events_at: Callable[[float], Sequence[PrivacyEvent]],
    epsilon: float,
    delta: float,
    *,
    basic_temperature: float,
    rtol: float = 1e-3,
) -> TightTemperature:
    """Lowest T >= 1 whose releases are (ε, δ)-DP by the tightest valid composition.

    Guarantee: the returned T satisfies ``epsilon_at(events_at(T), delta).epsilon <= ε``
    (:func:`pymc_dp.accounting.epsilon_at`, which takes the smallest of basic, advanced,
    PLD and bounded-range composition, each only where valid), so charging ``events_at(T)``
    records a run that is (ε, δ)-DP, replace-one. Every release's ε is c/T, so every
    accounting's total decreases as T grows; T is found by bisection on log T between
    max(1, ...) and the basic temperature (which always fits: the tight total is never above
    the basic one), keeping the invariant that the upper end fits, and stops when the two
    ends are within a relative ``rtol`` (the T returned is at most that much above the
    lowest that fits).

    Valid as a budget only when the releases and their parameters are fixed before any is
    drawn — true of a run, whose temperature, sweeps and chains are set in advance; the
    ledger's budget is a separate check (:class:`~pymc_dp.ledger.PrivacyLedger`,
    ``tight_budget``).

    Parameters
    ----------
    events_at : callable
        T ↦ the events the run will charge at temperature T (each with ``temperature`` T).
    epsilon : float
        Target ε > 0 for the whole run.
    delta : float
        Target δ, 0 < δ < 1 (at δ = 0 only basic composition applies: use
        :func:`calibrate_temperature`).
    basic_temperature : float
        T >= 1 of basic composition for the same ε (:func:`calibrate_temperature`).
    rtol : float, default 1e-3
        Relative precision of T.

    Returns
    -------
    TightTemperature

    Raises
    ------
    ValueError
        If ε, δ or the basic temperature are invalid, or the events do not fit at the basic
        temperature (they were not built for this ε).
    """
    target = validate_epsilon(epsilon)
    delta = validate_delta(delta, positive=True, reason=" for tight accounting")
    high = float(basic_temperature)
    if not math.isfinite(high) or high < 1.0:
        raise ValueError(f"basic_temperature must be finite and >= 1, got {basic_temperature!r}")

    def composed(temperature: float) -> Composition:
        return epsilon_at(tuple(events_at(temperature)), delta)

    def fits(composition: Composition) -> bool:
        return composition.epsilon <= target * (1 + _FITS)

    best = composed(high)
    if not fits(best):
        raise ValueError(
            f"the events at the basic temperature {high:g} compose to "
            f"{best.epsilon:g} > {target:g}: they do not describe this ε"
        )
    low = 1.0
    at_one = composed(low) if high > low else best
    if fits(at_one):
        return TightTemperature(low, float(basic_temperature), target, delta, at_one)
    while high / low > 1 + rtol:
        middle = math.sqrt(low * high)
        if middle in (low, high):
            break
        composition = composed(middle)
        if fits(composition):
            high, best = middle, composition
        else:
            low = middle
    return TightTemperature(high, float(basic_temperature), target, delta, best)


def tight_release_epsilon(
    epsilon: float, delta: float, compositions: int, *, rtol: float = 1e-9
) -> float:
    """Largest ε₀ such that k exponential-mechanism releases of ε₀ each are (ε, δ)-DP.

    The releases are k adaptive posterior draws or Gibbs updates, each ε₀-DP and ε₀-bounded
    range (the exponential mechanism at temperature T with a utility of sensitivity Δ,
    ε₀ = 2Δ/T). Their tightest valid total at δ (:func:`pymc_dp.accounting.epsilon_at`:
    bounded-range composition, Dong, Durfee & Rogers 2020, Prop. 4; advanced composition,
    Kairouz, Oh & Viswanath 2015, Thm 3.3; basic) is increasing in ε₀, so ε₀ is found by
    bisection on [ε/k, ε]: ε/k always fits (basic composition), and for k = 1 the answer
    is ε. The ε₀ returned fits (to the ledger's 1e-12 relative slack).

    Parameters
    ----------
    epsilon : float
        Total ε > 0 of the k releases.
    delta : float
        0 < δ < 1.
    compositions : int
        k >= 1.
    rtol : float
        Relative precision of ε₀.

    Returns
    -------
    float
        ε₀ in [ε/k, ε]; a run of k releases then needs a temperature 2Δ/ε₀ instead of
        k·2Δ/ε.

    Raises
    ------
    ValueError
        For invalid ε, δ or k.

    Examples
    --------
    >>> tight_release_epsilon(1.0, 1e-6, 1)
    1.0
    >>> round(tight_release_epsilon(1.0, 1e-6, 1000) * 1000, 1)  # vs 1 by basic composition
    11.8
    """
    target = validate_epsilon(epsilon)
    delta = validate_delta(delta, positive=True, reason=" for tight accounting")
    if (
        isinstance(compositions, bool)
        or not isinstance(compositions, int | np.integer)
        or compositions < 1
    ):
        raise ValueError(f"compositions must be an integer >= 1, got {compositions!r}")
    k = int(compositions)

    def fits(release: float) -> bool:
        event = PrivacyEvent(
            mechanism="gibbs-exponential",
            epsilon=k * release,
            delta=0.0,
            sensitivity=release / 2.0,
            neighbouring="replace-one",
            variables=(),
            noise_backend="numpy",
            temperature=1.0,
            compositions=k,
        )
        return epsilon_at((event,), delta).epsilon <= target * (1 + _FITS)

    low, high = target / k, target
    if fits(high):
        return high
    while high - low > rtol * low:
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
