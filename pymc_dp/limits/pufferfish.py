"""Pufferfish limits: posterior odds of competing conjectures, and the density-ratio check.

ε-Pufferfish(Θ, Ψ) (Kifer & Machanavajjhala 2014) protects pairs of competing conjectures
(S_i, S_j) ∈ Ψ under every data distribution θ ∈ Θ an attacker may hold. It equals ε-DP with
the Hamming metric when Θ holds every distribution under which the records are *mutually
independent* and Ψ pairs the values of each record (Bailie & Gong, Remark 8.6); for
correlated records the two differ, and a DP release can move a Pufferfish posterior further.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from pymc_dp.limits._common import (
    Bounds,
    check_distance,
    check_non_negative,
    radius,
    scalar_or_array,
    scale,
)
from pymc_dp.limits.distances import density_ratio_distance
from pymc_dp.limits.privacy import EpsilonSource, pure_epsilon

__all__ = ["PufferfishCheck", "pufferfish_odds_bounds", "pufferfish_posterior_check"]

_SLACK = 1e-9


def pufferfish_odds_bounds(prior_odds: Any, epsilon: EpsilonSource, distance: float = 1) -> Bounds:
    """Bounds on the posterior odds of S_i against S_j after an ε-Pufferfish release.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §7 eq. 17 (Prop. E.31; Kifer & Machanavajjhala 2014, p. 6): for every θ ∈ Θ and
    (S_i, S_j) ∈ Ψ, e^{-ε} <= [P(S_i | t, θ) / P(S_j | t, θ)] / [P_θ(S_i) / P_θ(S_j)] <= e^{ε},
    for almost every release t; it characterises ε-Pufferfish. For conjectures at distance
    d_Ψ in the graph of Ψ (Def. 7.3; Thm 8.1 IV) the factor is e^{±ε d_Ψ}. Under ε-DP with
    independent records (Remark 8.6), S_i = {x_k = a}, S_j = {x_k = b} and d_Ψ = 1.

    Parameters
    ----------
    prior_odds : array_like or xarray.DataArray, values finite and >= 0
        P_θ(S_i) / P_θ(S_j) (both conjectures of positive probability).
    epsilon : float, PrivacyLedger or xarray.DataTree
        The Pufferfish ε (nats), or a pure-DP ledger / trace when Remark 8.6 applies.
    distance : float
        d_Ψ between the two conjectures (1 for a pair of Ψ; ``math.inf`` gives [0, ∞]).

    Returns
    -------
    Bounds
        ``(lower, upper)`` posterior odds, of the shape of ``prior_odds``.

    Raises
    ------
    ValueError
        If an odds is negative or not finite, ε or the distance is invalid, or δ > 0.
    """
    odds = check_non_negative(prior_odds, "prior_odds")
    r = radius(pure_epsilon(epsilon), check_distance(distance))
    return Bounds(
        scalar_or_array(scale(odds, -r, keep_zeros=True)),
        scalar_or_array(scale(odds, r, keep_zeros=True)),
    )


class PufferfishCheck(NamedTuple):
    """Result of :func:`pufferfish_posterior_check`."""

    density_ratio_distance: float
    """d_R(posterior, prior) in nats."""
    epsilon: float
    """The ε it was checked against."""
    holds: bool
    """Whether d_R <= ε (with a relative slack of 1e-9 for rounding)."""


def pufferfish_posterior_check(
    prior: Any, posterior: Any, epsilon: EpsilonSource
) -> PufferfishCheck:
    """Check Thm 8.5: the posterior over a partition is within d_R <= ε of the prior.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §8 Thm 8.5, eq. 19: if M is ε-Pufferfish(Θ, Ψ) with Ψ every pair of cells of a
    partition {S_i}, then d_R(π_θ(· | t), π_θ(·)) <= ε for almost every t; conversely, if
    this holds for every θ ∈ Θ, M is ε-Pufferfish(Θ, Ψ). With the cells {x_k = a} of one
    record's values (eq. 20-21) it says the posterior and prior marginals of record k are
    in each other's density-ratio neighbourhood of radius ε. By Prop. E.17 the posterior is
    then also within d_MULT <= ε of the prior.

    Parameters
    ----------
    prior, posterior : array_like of float, same shape
        π_θ(i) and π_θ(i | t) over the cells of the partition (pmfs; or densities on one
        grid for a continuous marginal).
    epsilon : float, PrivacyLedger or xarray.DataTree
        The Pufferfish ε, or a pure-DP ledger / trace when Remark 8.6 applies.

    Returns
    -------
    PufferfishCheck
        ``(density_ratio_distance, epsilon, holds)``. A failure at one t and θ shows the
        release is *not* ε-Pufferfish(Θ, Ψ) for a Θ containing θ; a pass is evidence only.

    Raises
    ------
    ValueError
        If the arrays differ in shape, hold negative or non-finite values, or ε is invalid
        (δ > 0).
    """
    eps = pure_epsilon(epsilon)
    distance = density_ratio_distance(posterior, prior)
    holds = distance <= eps * (1.0 + _SLACK) + _SLACK if math.isfinite(distance) else False
    return PufferfishCheck(distance, eps, bool(holds))
