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

**Grouped parameters.** When records choose their parameter by a private group label
(``p[group]``), a replaced record may also move to another group, so x and x' are scored
under *different* parameter values θ_g and θ_g'. The supremum is then over θ_g and θ_g'
independently: Δ = sup_{x, θ} log Pr(x | θ) − inf_{x', θ'} log Pr(x' | θ'), the range of one
record's log-likelihood (``grouped=True``). For Bernoulli, Categorical and Multinomial records
this equals the shared-parameter bound; for Poisson and Normal records it is larger, because
the terms −λ and −(x − μ)² no longer cancel.

**Base measure h(x).** The tempered posterior ∝ [π(θ) ∏_i Pr(x_i | θ)]^{1/T} does not depend on
h(x_i): the exponential mechanism with utility log π(θ) + Σ_i (log Pr(x_i | θ) − c(x_i)) samples
the same distribution for any data-only c. So any bound on sup |log Pr(x'|θ) − c(x') −
log Pr(x|θ) + c(x)| is a valid Δ for the mechanism. :func:`multinomial_delta` uses c = log h,
which gives a closed form; the other functions keep h (c = 0), as the paper's eq. 13 does.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

__all__ = [
    "bernoulli_delta",
    "binomial_delta",
    "categorical_delta",
    "multinomial_delta",
    "normal_delta",
    "poisson_delta",
    "private_trials_delta",
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

    It also bounds grouped records (``p[group]``): at p = a0 the range includes f(0) − f(n) =
    n·log((1 − a0)/a0), which is the range of y·log p + (n − y)·log(1 − p) over every y and p,
    i.e. the mechanism's Δ with c = log h (module docstring) for any pair of groups.

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


def poisson_delta(
    max_count: int,
    rate_lower: float,
    rate_upper: float,
    *,
    min_count: int = 0,
    grouped: bool = False,
) -> float:
    """Δ of one Poisson(λ) count y ∈ m..M with λ ∈ [λ_lo, λ_hi], λ_lo > 0.

    log Pr(y | λ) = y·log λ − λ − log y!. With one shared λ the −λ term cancels, so
    Δ = sup_λ (max_y f_λ − min_y f_λ) with f_λ(y) = y·log λ − log y!. This is convex in log λ,
    so the supremum is at λ_lo or λ_hi.

    With ``grouped=True`` (a record may move between groups with different rates) Δ is the range
    of log Pr(y | λ) over y and λ. For each y it is concave in λ: its maximum is at λ = y
    clipped to [λ_lo, λ_hi], its minimum at an end.

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
    if int(min_count) != min_count or not 0 <= min_count <= max_count:
        raise ValueError(f"poisson: need 0 <= min_count <= max_count, got {min_count!r}")
    y = np.arange(int(min_count), int(max_count) + 1)
    if grouped:
        def log_pmf(rate):
            return y * np.log(rate) - rate - gammaln(y + 1)

        highest = log_pmf(np.clip(y, rate_lower, rate_upper)).max()
        lowest = min(log_pmf(rate_lower).min(), log_pmf(rate_upper).min())
        return float(highest - lowest)
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
    *,
    grouped: bool = False,
) -> float:
    """Δ of one Normal(μ, σ²) record x ∈ [a, b], known σ, μ ∈ [m_lo, m_hi].

    log Pr(x | μ) = −(x − μ)²/(2σ²) + const, so
    Δ = sup_μ (max_x (x − μ)² − min_x (x − μ)²) / (2σ²). Outside [a, b] the bracket is linear
    in μ, and inside it max_x (x − μ)² is convex, so the supremum is at m_lo, m_hi, or at a or
    b when they lie in [m_lo, m_hi].

    With ``grouped=True`` (x and x' scored under different means) Δ = (max (x − μ)² −
    min (x − μ)²)/(2σ²) over x ∈ [a, b] and μ ∈ [m_lo, m_hi] independently: the maximum is at
    a corner, the minimum is the squared gap between the intervals (0 if they overlap).

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
    if grouped:
        furthest = max((b - mean_lower) ** 2, (a - mean_upper) ** 2)
        gap = max(0.0, mean_lower - b, a - mean_upper)
        return (furthest - gap**2) / (2 * sigma**2)
    candidates = [mean_lower, mean_upper, *(v for v in (a, b) if mean_lower <= v <= mean_upper)]

    def spread(mu: float) -> float:
        furthest = max((a - mu) ** 2, (b - mu) ** 2)
        nearest = 0.0 if a <= mu <= b else min((a - mu) ** 2, (b - mu) ** 2)
        return furthest - nearest

    return max(spread(float(mu)) for mu in candidates) / (2 * sigma**2)


def multinomial_delta(n_trials: int, truncation: float, n_categories: int) -> float:
    """Δ of one Multinomial(n, θ) record, θ in the simplex truncated at θ_j >= a0.

    Δ = n·log((1 − (K − 1)·a0)/a0), with c = log h (module docstring): the utility
    Σ_j y_j log θ_j of a count vector y with Σ y_j = n lies in [n·log a0, n·log(1 − (K − 1)a0)],
    and both ends are reached (all n trials in the smallest or the largest component, θ at a
    vertex of the truncated simplex), for one shared θ and for grouped records alike. For n = 1
    it is :func:`categorical_delta`.

    Raises
    ------
    ValueError
        If n < 1 is not an integer, K < 2, or a0 is missing (Δ = ∞) or >= 1/K.
    """
    if int(n_trials) != n_trials or n_trials < 1:
        raise ValueError(f"multinomial: n_trials must be an integer >= 1, got {n_trials!r}")
    return int(n_trials) * categorical_delta(truncation, n_categories)


def private_trials_delta(max_trials: int, smallest_probability: float) -> float:
    """Δ of one Binomial/Multinomial record whose number of trials m ∈ 0..M is private.

    With h kept, log Pr(y | m, θ) = log h(y) + Σ_j y_j log θ_j lies in [M·log θ_min, 0]: 0 for
    a record with no trials, M·log θ_min for M trials all in the least likely outcome. Both are
    reached, so Δ = M·log(1/θ_min), with θ_min the smallest probability of the truncated
    parameter space (a0, or min(lower, 1 − upper) for a truncated Beta). Grouped records give
    the same range.

    Raises
    ------
    ValueError
        If M < 1 is not an integer, or θ_min is not in (0, 1/2] (Δ = ∞ without truncation).
    """
    if int(max_trials) != max_trials or max_trials < 1:
        raise ValueError(f"max_trials must be an integer >= 1, got {max_trials!r}")
    if not 0 < smallest_probability <= 0.5:
        raise ValueError(
            "Δ is infinite without a truncation of the probabilities; the smallest probability "
            f"must lie in (0, 1/2], got {smallest_probability!r}"
        )
    return int(max_trials) * math.log(1 / smallest_probability)
