"""The Normal family: Normal statistics (known σ), their Δ, and the tempered Normal update.

A Normal(μ, σ²) likelihood with σ a known constant and a Normal(μ₀, σ₀²) prior on μ.
Per-record statistic S(x) = (x/σ², 1/σ²); aggregate over the records of a group:
(Σx/σ², n/σ²). Posterior: Normal(m, 1/P) with P = 1/σ₀² + n/σ², m = (μ₀/σ₀² + Σx/σ²)/P.

Log-likelihood bound Δ (nats; :mod:`pymc_dp.families.bounds`) of one value x ∈ [a, b] with
μ ∈ [m_lo, m_hi]: :func:`normal_log_likelihood_bound`. Both the data bounds and the mean
truncation are needed; without either Δ = ∞ (Foulds et al. 2016, §3.2 note the Gaussian needs
bounded data; this bound follows their eq. 9 and 13).

Tempered update (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19):
:func:`normal_tempered_parameters` and :func:`normal_tempered_draw` (SciPy's ``truncnorm``).

**Laplace statistics, unknown mean and sd** (:class:`NormalFamily`; the bounded families of
:mod:`pymc_dp.families.bounded`). Values x ∈ [a, b] (declared) are centred and rescaled to
w = (x − a)/(b − a) − ½ ∈ [−½, ½] and released through (n, Σw, Σw²) with ε split 30/70
between Σw and Σw² (n public under replace-one; :mod:`pymc_dp.families.second_moments`,
which holds the statistics, their sensitivity, the plug-in likelihood and the exact
two-component noise-aware likelihood this family shares with linear regression).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from pymc_dp.families.bounded import BoundedLink, BoundedStructure, check_bounded_values
from pymc_dp.families.second_moments import SecondMomentFamily, second_moment_names
from pymc_dp.truncated import truncated_normal

__all__ = [
    "NormalFamily",
    "normal_log_likelihood_bound",
    "normal_record_statistics",
    "normal_tempered_draw",
    "normal_tempered_parameters",
]


def normal_record_statistics(values: np.ndarray, sigma: float) -> np.ndarray:
    """Per-record statistics (x/σ², 1/σ²) of validated values, shape (n, 2), float64. Private."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    precision = 1.0 / sigma**2
    return np.column_stack([values * precision, np.full(values.size, precision)])


def normal_log_likelihood_bound(
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


def normal_tempered_parameters(
    prior_parameters: tuple[np.ndarray, ...], statistics: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, sd) of Normal(μ₀, σ₀²) × statistics (Σx/σ², n/σ²), raised to 1/T.

    Normal(m, T/P) with P = 1/σ₀² + n/σ² and m = (μ₀/σ₀² + Σx/σ²)/P: the conjugate posterior
    with its log density divided by T (Foulds et al. 2016, §3.1 eq. 14). ``prior_parameters``
    is (μ₀, σ₀), broadcast to (G,); ``statistics`` has shape (G, 2).
    """
    mu, sigma = prior_parameters
    precision = 1 / sigma**2 + statistics[:, 1]
    mean = (mu / sigma**2 + statistics[:, 0]) / precision
    return mean, np.sqrt(float(temperature) / precision)


def normal_tempered_draw(
    parameters: tuple[np.ndarray, ...], bounds: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Exact draw of Normal(mean, sd) truncated to bounds = (m_lo, m_hi), elementwise."""
    mean, sd = parameters
    return truncated_normal(mean, sd, bounds[0], bounds[1], rng)


class NormalFamily(SecondMomentFamily):
    """Normal(μ, σ) records x ∈ [a, b] (declared), μ and σ scalar graphs (any priors).

    Statistics (n, Σw, Σw²) of w = (x − a)/(b − a) − ½; see the module docstring.
    """

    name = "normal"
    likelihood = "normal"
    pattern = "Normal(mu, sigma), mu and sigma scalar graphs, with data_bounds on the values"
    # the exact two-component likelihood has no latent variable; the posterior's own curved
    # ridge (the release pins m² + s²) still diverged 0–14 per 1,000 at PyMC's 0.8, none at
    # 0.9 on the calibration study's designs (docs/calibration.md)
    noise_aware_sampler: ClassVar[Mapping[str, object]] = {"target_accept": 0.9}

    def records(self, link: BoundedLink) -> tuple[np.ndarray, ...]:
        structure = link.structure
        values = check_bounded_values(
            np.asarray(link.data).reshape(-1),
            *structure.bounds,
            link.observed,
            "values",
            link.observed in structure.clamp,
        )
        return (values,)

    def component_names(self, structure: BoundedStructure) -> list[str]:
        return second_moment_names(["u"])

    def unit_coefficients(self, parameters, structure):
        low, high = structure.bounds
        width = high - low
        return (parameters["mu"] - low) / width, parameters["sigma"] / width

    def unit_moments(self, parameters, structure, name):
        mean, sd = self.unit_coefficients(parameters, structure)
        return mean.reshape((1,)), (sd**2).reshape((1, 1))

    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        low, high = structure.bounds
        what = "(Σu, Σu²)" if neighbouring == "replace-one" else "(n, Σu, Σu²)"
        public = "; n public" if neighbouring == "replace-one" else ""
        return (
            f"normal sufficient statistics {what} of u = (x − {low:g})/({high:g} − {low:g}) − ½"
            f"{public}; {self.describe_split(structure, neighbouring)}"
        )
