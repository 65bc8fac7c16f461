"""The Gamma family: Poisson statistics, their Δ, and the tempered Gamma update.

A Poisson(λ) likelihood with a Gamma(α, rate β) prior on λ. Per-record statistic S(y) = (y, 1);
aggregate over the records of a group: (Σy, n). Posterior: Gamma(α + Σy, rate β + n).

Log-likelihood bound Δ (nats; :mod:`pymc_dp.families.bounds`) of one count y ∈ m..M with
λ ∈ [λ_lo, λ_hi]: :func:`poisson_log_likelihood_bound`. Both the count bound M and the rate
truncation are needed; without either Δ = ∞ (Foulds et al. 2016 work out no Poisson bound; this
one follows their eq. 9 and 13).

Tempered update (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19): :func:`gamma_tempered_parameters`
and :func:`gamma_tempered_draw`, an exact inverse-CDF draw of the truncated Gamma.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from pymc_dp.families.base import reject_out_of_range, require_integers
from pymc_dp.families.bounded import tempered_record_bounds
from pymc_dp.truncated import truncated_gamma

__all__ = [
    "gamma_tempered_draw",
    "gamma_tempered_parameters",
    "poisson_log_likelihood_bound",
    "poisson_record_statistics",
    "poisson_tempered_statistics",
]


def poisson_record_statistics(counts: np.ndarray) -> np.ndarray:
    """Per-record statistics (y, 1) of validated whole counts, shape (n, 2), float64. Private."""
    counts = np.asarray(counts).reshape(-1)
    return np.column_stack([counts, np.ones(counts.size)]).astype(np.float64)


def poisson_tempered_statistics(
    name: str, data: np.ndarray, truncation: tuple[float, float], grouped: bool, bounds
) -> tuple[np.ndarray, float]:
    """The per-record statistics (y, 1) and Δ of a Poisson likelihood on the
    posterior-sampling routes: counts validated against ``data_bounds`` (whole counts
    low..high, low ≥ 0), the rate truncated to ``truncation``. **Private** (the statistics).

    Raises
    ------
    NonPrivateModelError
        Without declared bounds.
    ValueError
        For bounds that are not whole counts ≥ 0.
    InvalidPrivateDataError
        For counts that are not whole numbers or outside the bounds (counted, never shown).
    """
    low, high = tempered_record_bounds(name, bounds, "counts")
    if low < 0 or low != int(low) or high != int(high):
        raise ValueError(f"{name}: Poisson data_bounds must be whole counts >= 0, got {bounds!r}")
    counts = require_integers(data.reshape(-1), name, "counts")
    reject_out_of_range(counts, int(low), int(high), name, "counts")
    bound = poisson_log_likelihood_bound(
        int(high), *truncation, min_count=int(low), grouped=grouped
    )
    return poisson_record_statistics(counts), bound


def poisson_log_likelihood_bound(
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


def gamma_tempered_parameters(
    prior_parameters: tuple[np.ndarray, ...], statistics: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """(shape, rate) of Gamma(α, rate β) × Poisson statistics (Σy, n), raised to 1/T.

    Gamma((α − 1 + Σy)/T + 1, rate (β + n)/T): every exponent of the conjugate posterior
    divided by T (Foulds et al. 2016, §3.1 eq. 14). ``prior_parameters`` is (α, scale = 1/β)
    as PyMC stores it, broadcast to (G,); ``statistics`` has shape (G, 2).
    """
    alpha, scale = prior_parameters
    t = float(temperature)
    return (alpha - 1 + statistics[:, 0]) / t + 1, (1 / scale + statistics[:, 1]) / t


def gamma_tempered_draw(
    parameters: tuple[np.ndarray, ...], bounds: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Exact draw of Gamma(shape, rate) truncated to bounds = (λ_lo, λ_hi), elementwise."""
    shape, rate = parameters
    return truncated_gamma(shape, rate, bounds[0], bounds[1], rng)
