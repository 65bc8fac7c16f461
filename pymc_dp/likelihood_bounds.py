"""Closed-form log-likelihood bounds Δ for posterior sampling at temperature T = 2Δ/ε.

Foulds et al. (2016), §3.1 eq. (7), (9) and (13): the one-posterior-sample (OPS) mechanism
samples Pr(θ | X)^{1/T}. It is ε-DP with T = 2Δ/ε, where

    Δ = sup_{x, x', θ ∈ Θ} |log Pr(x' | θ) − log Pr(x | θ)|

is taken over single records x, x' (one record replaced) and the parameter space Θ. The
prior cancels (eq. 9). Every term of the log-likelihood is kept, including log h(x)
(eq. 13), so these are the paper's bounds, not tightened ones.

Each bound below is exact for its family. Each needs a bounded parameter space and, for
count and continuous data, bounded data. Without them Δ = ∞ and the functions raise a
``ValueError`` that names the missing bound. They compute the supremum analytically
(endpoint arguments stated per function), never on a grid; a grid evaluation is only a test.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

__all__ = [
    "bernoulli_delta",
    "binomial_delta",
    "categorical_delta",
    "normal_delta",
    "poisson_delta",
]


def _probability_truncation(truncation: float, n_categories: int, family: str) -> float:
    a0 = float(truncation)
    if not math.isfinite(a0) or a0 <= 0:
        raise ValueError(
            f"{family}: Δ is infinite without a truncation of the probabilities; give "
            f"truncation a0 > 0 (each probability >= a0), got {truncation!r}"
        )
    if a0 * n_categories >= 1:
        raise ValueError(f"{family}: truncation a0 must be < 1/{n_categories}, got {a0}")
    return a0


def categorical_delta(truncation: float, n_categories: int) -> float:
    """Δ of one categorical record with every probability in [a0, 1 − (K − 1)·a0].

    Δ = log((1 − (K − 1)·a0) / a0): the log of the largest over the smallest probability
    in the truncated simplex (Foulds et al. App. E.1; eq. 15 for K = 2).

    Raises
    ------
    ValueError
        If a0 <= 0 (Δ = ∞), a0 >= 1/K or K < 2.
    """
    if int(n_categories) != n_categories or n_categories < 2:
        raise ValueError(f"need K >= 2 categories, got {n_categories!r}")
    a0 = _probability_truncation(truncation, int(n_categories), "categorical")
    return math.log((1 - (n_categories - 1) * a0) / a0)


def bernoulli_delta(truncation: float) -> float:
    """Δ = log((1 − a0)/a0) for a Bernoulli record with p ∈ [a0, 1 − a0] (Foulds eq. 15).

    For ε = 1 and a0 = 0.2, T = 2Δ/ε = 2 log 4 ≈ 2.77 (Foulds Fig. 1, printed as 2.7).
    """
    return categorical_delta(truncation, 2)


def binomial_delta(n_trials: int, truncation: float) -> float:
    """Δ of one Binomial(n, p) record (y in 0..n) with p ∈ [a0, 1 − a0].

    log Pr(y | p) = log C(n, y) + y·logit(p) + n·log(1 − p). The last term cancels between
    records, so Δ = sup_p (max_y f_p − min_y f_p) with f_p(y) = log C(n, y) + y·logit(p).
    This is convex in logit(p), so the supremum is at p = a0 or p = 1 − a0. For n = 1 it is
    the Bernoulli bound.

    Raises
    ------
    ValueError
        If n < 1 is not an integer, or a0 is missing or invalid.
    """
    if int(n_trials) != n_trials or n_trials < 1:
        raise ValueError(f"binomial: n_trials must be an integer >= 1, got {n_trials!r}")
    a0 = _probability_truncation(truncation, 2, "binomial")
    y = np.arange(int(n_trials) + 1)
    log_choose = gammaln(n_trials + 1) - gammaln(y + 1) - gammaln(n_trials - y + 1)
    ranges = []
    for p in (a0, 1 - a0):
        f = log_choose + y * math.log(p / (1 - p))
        ranges.append(f.max() - f.min())
    return float(max(ranges))


def poisson_delta(max_count: int, rate_lower: float, rate_upper: float) -> float:
    """Δ of one Poisson(λ) count y ∈ 0..M with λ ∈ [λ_lo, λ_hi], λ_lo > 0.

    log Pr(y | λ) = y·log λ − λ − log y!. The −λ term cancels, so Δ = sup_λ (max_y f_λ −
    min_y f_λ) with f_λ(y) = y·log λ − log y!. This is convex in log λ, so the supremum is at
    λ_lo or λ_hi.

    Raises
    ------
    ValueError
        If the count bound M or the rate truncation is missing (Δ = ∞) or invalid.
    """
    if (
        max_count is None
        or not math.isfinite(max_count)
        or int(max_count) != max_count
        or max_count < 1
    ):
        raise ValueError(
            f"poisson: Δ is infinite for unbounded counts; give max_count M >= 1, got {max_count!r}"
        )
    if not (0 < rate_lower < rate_upper < math.inf):
        raise ValueError(
            "poisson: Δ is infinite unless the rate is truncated to 0 < rate_lower < rate_upper "
            f"< ∞, got [{rate_lower!r}, {rate_upper!r}]"
        )
    y = np.arange(int(max_count) + 1)
    ranges = []
    for rate in (rate_lower, rate_upper):
        f = y * math.log(rate) - gammaln(y + 1)
        ranges.append(f.max() - f.min())
    return float(max(ranges))


def normal_delta(
    data_lower: float,
    data_upper: float,
    mean_lower: float,
    mean_upper: float,
    sigma: float,
) -> float:
    """Δ of one Normal(μ, σ²) record x ∈ [a, b], known σ, μ ∈ [m_lo, m_hi].

    log Pr(x | μ) = −(x − μ)²/(2σ²) + const, so
    Δ = sup_μ (max_x (x − μ)² − min_x (x − μ)²) / (2σ²). Outside [a, b] the bracket is linear
    in μ, and inside it max_x (x − μ)² is convex, so the supremum is at m_lo, m_hi, or at a or
    b when they lie in [m_lo, m_hi].

    Raises
    ------
    ValueError
        If the data or mean bounds are missing or infinite (Δ = ∞), out of order, or σ <= 0.
    """
    bounds = {"data": (data_lower, data_upper), "mean": (mean_lower, mean_upper)}
    for name, (low, high) in bounds.items():
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(
                f"normal: Δ is infinite without finite {name} bounds; got [{low!r}, {high!r}]"
            )
        if low > high:
            raise ValueError(f"normal: {name} bounds out of order: [{low}, {high}]")
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"normal: sigma must be finite and > 0, got {sigma!r}")
    a, b = float(data_lower), float(data_upper)
    candidates = [mean_lower, mean_upper, *(v for v in (a, b) if mean_lower <= v <= mean_upper)]

    def spread(mu: float) -> float:
        furthest = max((a - mu) ** 2, (b - mu) ** 2)
        nearest = 0.0 if a <= mu <= b else min((a - mu) ** 2, (b - mu) ** 2)
        return furthest - nearest

    return max(spread(float(mu)) for mu in candidates) / (2 * sigma**2)
