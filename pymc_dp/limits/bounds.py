"""Bounds on what an ε-DP release can tell: posterior, densities of the release, test power.

Every bound is a function of ε (pure DP; :func:`pymc_dp.limits.pure_epsilon` reads it from a
ledger or trace) and Δ, the dataset distance in records over which the reader is uncertain
(:mod:`pymc_dp.limits.distances`). It holds for every data model, every prior and every
ε-DP mechanism, and is pointwise tight over them (Bailie & Gong, §9), which is why it is
wide for any one model: it says how far inference *could possibly* move, not where it goes.
Δ = ∞ gives vacuous bounds ([0, 1] for probabilities, [0, ∞] for densities).

The formulas of the paper were rebuilt from a text whose mathematics was lost (the digest
marks them [RECON]); each is checked in ``tests/test_limits.py`` by exact enumeration or
simulation, and two sharper forms derived from the same argument are offered with
``sharp=True`` (marked [DERIVED]: not in the paper).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import xarray as xr
from scipy.special import expit, logit

from pymc_dp.limits._common import (
    Bounds,
    check_distance,
    check_non_negative,
    check_probability,
    radius,
    raw,
    scalar_or_array,
    scale,
)
from pymc_dp.limits.privacy import EpsilonSource, pure_epsilon

__all__ = [
    "posterior_bounds",
    "posterior_density_bounds",
    "power_bounds",
    "prior_predictive_bounds",
    "privatised_data_bounds",
    "ratio_bounds",
]

_CONSISTENCY_SLACK = 1e-9  # relative slack when checking densities against e^{εΔ}


def _radius(epsilon: EpsilonSource, distance: float) -> float:
    return radius(pure_epsilon(epsilon), check_distance(distance))


def ratio_bounds(epsilon: EpsilonSource, distance: float) -> Bounds:
    """(e^{-εΔ}, e^{εΔ}): how far any likelihood ratio, posterior-to-prior ratio or Bayes
    factor can be from 1.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §3 Thm 3.5 IV, eq. 5 (group privacy: e^{-εd(x,x')} p_x(t) <= p_x'(t) <=
    e^{εd(x,x')} p_x(t)) and §6 Thm 6.4 (density form: e^{-εΔ} π(θ) <= π(θ | t) <=
    e^{εΔ} π(θ)). [DERIVED in the digest, from the same likelihood-ratio step: any Bayes
    factor p_{Π₁}(t)/p_{Π₀}(t), and any posterior odds over prior odds, lies in this range.]

    Parameters
    ----------
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε (nats) or its ledger / trace (:func:`pymc_dp.limits.pure_epsilon`).
    distance : float
        Δ, the dataset distance in records (>= 0, ``math.inf`` allowed).

    Returns
    -------
    Bounds
        ``(lower, upper)`` floats; ``(0, inf)`` when εΔ = ∞.

    Raises
    ------
    ValueError
        If ε or Δ is invalid, or the ledger has δ > 0.
    """
    r = _radius(epsilon, distance)
    with np.errstate(over="ignore"):
        return Bounds(float(np.exp(-r)), float(np.exp(r)))


def posterior_bounds(
    prior_probability: Any,
    epsilon: EpsilonSource,
    distance: float,
    *,
    sharp: bool = False,
) -> Bounds:
    """Bounds on the posterior probability Π(A | t) of events A, for any ε-DP release t.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Thm 6.4, eq. 12: e^{-εΔ} Π(A) <= Π(A | t) <= e^{εΔ} Π(A), clipped to
    [0, 1] (the posterior lies in the interval of measures of radius εΔ around the prior),
    where Δ is the d-diameter of the datasets the prior makes possible (Assumption 6.1: a
    connected set). Δ = 1 gives Gong & Meng's bound for an attacker on one record; Δ = n
    for an analyst of n records under the Hamming metric.

    With ``sharp=True`` [DERIVED, digest §B.7; not in the paper], the odds form: posterior
    odds of A against not-A are within e^{±εΔ} of the prior odds, so
    Π(A | t) <= e^{εΔ}Π(A) / (e^{εΔ}Π(A) + 1 − Π(A)) and symmetrically below. It follows
    from the same step as Thm 6.4 (p_θ(t) <= e^{εΔ} p_θ'(t)) and is never wider; it is
    attained by the paper's §9 construction.

    Parameters
    ----------
    prior_probability : array_like or xarray.DataArray, values in [0, 1]
        Π(A) for each event A (any shape; a DataArray keeps its labels).
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε or its ledger / trace (:func:`pymc_dp.limits.pure_epsilon`).
    distance : float
        Δ in records (>= 0, ``math.inf`` allowed: then [0, 1], and 0 for Π(A) = 0).
    sharp : bool
        Use the odds form instead of eq. 12.

    Returns
    -------
    Bounds
        ``(lower, upper)``, probabilities of the shape of ``prior_probability`` (floats for
        a scalar).

    Raises
    ------
    ValueError
        If a prior probability is outside [0, 1], ε or Δ is invalid, or the ledger has
        δ > 0.
    """
    prior = check_probability(prior_probability, "prior_probability")
    r = _radius(epsilon, distance)
    if not sharp:
        lower = scale(prior, -r, keep_zeros=True)
        upper = np.minimum(scale(prior, r, keep_zeros=True), 1.0)
        return Bounds(scalar_or_array(lower), scalar_or_array(upper))
    data = raw(prior)
    if math.isinf(r):
        lower_raw = np.where(data >= 1.0, 1.0, 0.0)
        upper_raw = np.where(data > 0.0, 1.0, 0.0)
    else:
        log_odds = logit(data)
        lower_raw = expit(log_odds - r)
        upper_raw = expit(log_odds + r)
    lower = prior * 0.0 + lower_raw
    upper = prior * 0.0 + upper_raw
    return Bounds(scalar_or_array(lower), scalar_or_array(upper))


def posterior_density_bounds(prior_density: Any, epsilon: EpsilonSource, distance: float) -> Bounds:
    """The envelope e^{-εΔ} π(θ) <= π(θ | t) <= e^{εΔ} π(θ) of every posterior density.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Thm 6.4 (density form) and Example 6.7 / Fig. 4 (the prior density times
    e^{±ε} for one record, Δ = 1). The envelope is not a density (do not normalise it);
    real posteriors usually sit far inside it.

    Parameters
    ----------
    prior_density : array_like or xarray.DataArray, values finite and >= 0
        π(θ) at the points of interest, e.g. a grid (any shape; units: per unit of θ).
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε or its ledger / trace.
    distance : float
        Δ in records (>= 0, ``math.inf`` allowed: upper ∞ where π > 0).

    Returns
    -------
    Bounds
        ``(lower, upper)`` densities of the shape of ``prior_density`` (0 where π is 0).

    Raises
    ------
    ValueError
        If a density is negative or not finite, ε or Δ is invalid, or δ > 0.
    """
    prior = check_non_negative(prior_density, "prior_density")
    r = _radius(epsilon, distance)
    lower = scale(prior, -r, keep_zeros=True)
    upper = scale(prior, r, keep_zeros=True)
    return Bounds(scalar_or_array(lower), scalar_or_array(upper))


def _reduce(values: Any, axis: int | str, how: str) -> Any:
    if isinstance(values, xr.DataArray):
        dim = axis if isinstance(axis, str) else values.dims[axis]
        return getattr(values, how)(dim)
    if isinstance(axis, str):
        raise ValueError("axis can be a dimension name only for an xarray.DataArray")
    return getattr(np, how)(values, axis=axis)


def _mixture_bounds(
    densities: Any, epsilon: EpsilonSource, distance: float, axis: int | str, sharp: bool
) -> Bounds:
    values = check_non_negative(densities, "densities")
    r = _radius(epsilon, distance)
    highest = _reduce(values, axis, "max")
    lowest = _reduce(values, axis, "min")
    if math.isfinite(r):
        hi, lo = raw(highest), raw(lowest)
        limit = math.exp(min(r, 700.0)) * (1.0 + _CONSISTENCY_SLACK)
        bad = int(np.count_nonzero((hi > 0) & (hi > limit * lo)))
        if bad:
            raise ValueError(
                f"the densities are not those of an epsilon-DP mechanism over a support of "
                f"diameter {distance!r} records: at {bad} of {hi.size} outputs the largest is "
                f"more than e^(epsilon*distance) times the smallest (Bailie & Gong, Thm 3.5 IV); "
                "check epsilon, distance and that the rows are p_x(t) over connected datasets"
            )
    lower = scale(highest, -r, keep_zeros=False)
    upper = scale(lowest, r, keep_zeros=False)
    if sharp:
        lower = np.maximum(lower, lowest)
        upper = np.minimum(upper, highest)
    return Bounds(scalar_or_array(lower), scalar_or_array(upper))


def privatised_data_bounds(
    densities: Any,
    epsilon: EpsilonSource,
    distance: float,
    *,
    axis: int | str = 0,
    sharp: bool = False,
) -> Bounds:
    """Bounds on the density p_θ(t) = ∫ p_x(t) dP_θ(x) of the release under a data model θ.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §4 Thm 4.1, eq. 7: with Δ_θ the d-diameter of the datasets that P_θ makes
    possible (a connected set), l_θ(t) = e^{-εΔ} ess sup_x p_x(t) <= p_θ(t) <=
    e^{εΔ} ess inf_x p_x(t) = u_θ(t); Lemma F.7 (one known p_x: e^{-εΔ} p_x(t) <= p_θ(t) <=
    e^{εΔ} p_x(t), pass one row). Example 4.4 / Fig. 2 (:func:`laplace_sum_bounds`) and
    Example 4.5, eq. 8 (:func:`randomised_response_bounds`) are instances. The bounds depend
    on θ only through the support, so they hold for every data model on it. As functions of
    θ at the observed t they bound the marginal likelihood.

    With ``sharp=True`` [DERIVED, digest §B.8: a mixture lies between its components] the
    result is intersected with [min_x p_x(t), max_x p_x(t)], which is never wider when
    every p_x of the support is given.

    Parameters
    ----------
    densities : array_like or xarray.DataArray, values finite and >= 0
        p_x(t) for each dataset x of the support along ``axis`` (shape (n_datasets, ...),
        the trailing axes indexing outputs t). Densities with respect to one dominating
        measure (a pmf for discrete releases; per unit of t for continuous ones).
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε or its ledger / trace.
    distance : float
        Δ_θ in records (>= 0, ``math.inf`` allowed: then [0, ∞]).
    axis : int or str
        The datasets' axis (a dimension name for a DataArray).
    sharp : bool
        Intersect with the elementary mixture bounds.

    Returns
    -------
    Bounds
        ``(lower, upper)`` densities with the datasets' axis removed. Not densities
        themselves: they need not integrate to 1.

    Raises
    ------
    ValueError
        If a density is negative or not finite; if ε or Δ is invalid or δ > 0; if the
        largest and smallest density at some t differ by more than e^{εΔ} (the inputs
        cannot come from an ε-DP mechanism over that support).
    """
    return _mixture_bounds(densities, epsilon, distance, axis, sharp)


def prior_predictive_bounds(
    densities: Any,
    epsilon: EpsilonSource,
    distance: float,
    *,
    axis: int | str = 0,
    sharp: bool = False,
) -> Bounds:
    """Bounds on the prior predictive density p_Π(t) = ∫ p_θ(t) dΠ(θ) of the release.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Thm 6.2, eq. 11: as Thm 4.1 with the support of the prior predictive data,
    X_Π (Assumption 6.1: connected, prior proper). The bounds are free of the data model
    and of the prior: an almost assumption-free sensitivity analysis of the model evidence
    p_Π(t) at the observed t. Example 4.4 at ε = 0.1, n = 10: p_Π(t) >= 0.0184 on [0, 10]
    and <= 0.0824.

    Parameters
    ----------
    densities : array_like or xarray.DataArray, values finite and >= 0
        p_x(t) for each dataset x the prior makes possible, along ``axis``.
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε or its ledger / trace.
    distance : float
        Δ, the d-diameter of X_Π in records (``math.inf`` allowed).
    axis : int or str
        The datasets' axis.
    sharp : bool
        Intersect with [min_x p_x(t), max_x p_x(t)] [DERIVED].

    Returns
    -------
    Bounds
        ``(lower, upper)`` with the datasets' axis removed.

    Raises
    ------
    ValueError
        As :func:`privatised_data_bounds`.
    """
    return _mixture_bounds(densities, epsilon, distance, axis, sharp)


def power_bounds(
    alpha: Any,
    epsilon: EpsilonSource,
    distance: float,
    *,
    kind: Literal["level", "size"] = "level",
    sharp: bool = False,
) -> Bounds:
    """Bounds on the power of any test of the data-generating model from an ε-DP release.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §5 Thm 5.1 (a level-α test of H0: θ ∈ Θ0 against H1: θ ∈ Θ1 has power at most
    e^{εΔ}α, with Δ the largest d-distance between a dataset possible under H0 and one
    possible under H1, their union connected) and Cor. 5.3, eq. 10 (a size-α test has
    power at least e^{-εΔ}α); §8 Thm 8.7, eq. 22 (the same under ε-Pufferfish for
    H0: X ~ P_{θ|S_i} against H1: X ~ P_{θ|S_j}, with Δ = d_Ψ = 1 for a discriminative
    pair: testing x_i = a against x_i = b at level 0.05 has power <= 0.05e^ε). Wasserman &
    Zhou's e^{kε}α for k records is Δ = k. Tight for small α (§9: a Laplace count).

    With ``sharp=True`` [DERIVED, digest §B.4: the same inequality applied to the
    complementary test 1 − φ] also power <= 1 − e^{-εΔ}(1 − α), and for a size-α test
    power >= 1 − e^{εΔ}(1 − α). These bind for large α.

    Parameters
    ----------
    alpha : array_like or xarray.DataArray, values in [0, 1]
        The level (largest type-I error allowed) or size (largest type-I error attained).
    epsilon : float, PrivacyLedger or xarray.DataTree
        Pure ε (or Pufferfish ε) or its ledger / trace.
    distance : float
        Δ in records (d_Ψ for Thm 8.7); ``math.inf`` gives [0, 1].
    kind : {"level", "size"}
        Level-α tests have no lower bound (a test may never reject); size-α tests do.
    sharp : bool
        Add the complementary bounds.

    Returns
    -------
    Bounds
        ``(lower, upper)`` powers in [0, 1], of the shape of ``alpha``; the bounds hold at
        every alternative θ1 ∈ Θ1.

    Raises
    ------
    ValueError
        If α is outside [0, 1], ``kind`` is unknown, ε or Δ is invalid, or δ > 0.
    """
    if kind not in ("level", "size"):
        raise ValueError(f"kind must be 'level' or 'size', got {kind!r}")
    a = check_probability(alpha, "alpha")
    r = _radius(epsilon, distance)
    upper = np.minimum(scale(a, r, keep_zeros=False), 1.0)
    if kind == "size":
        lower = scale(a, -r, keep_zeros=True)
    else:
        lower = a * 0.0
    if sharp and math.isfinite(r):
        upper = np.minimum(upper, 1.0 - math.exp(-r) * (1.0 - a))
        if kind == "size":
            lower = np.maximum(lower, 1.0 - scale(1.0 - a, r, keep_zeros=True))
    return Bounds(scalar_or_array(lower), scalar_or_array(upper))
