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
:mod:`pymc_dp.families.bounded`). Values x ∈ [a, b] (declared) are rescaled to
u = (x − a)/(b − a) ∈ [0, 1]. With z = (1, w) for a vector w of q unit-interval variables
(q = 1, w = u here; q = p + 1, w = (x̃, ỹ) for :mod:`~pymc_dp.families.regression`), the
statistics are the D = (q + 1)(q + 2)/2 entries of the upper triangle of Σ_i z_i z_iᵀ
(:func:`second_moment_statistics`): n, the sums Σw_j and the cross products Σw_j w_k. Every
entry of z zᵀ lies in [0, 1], so one record moves each released entry by at most 1:

* add-remove-one: all D entries are released (n too), L1 sensitivity Δ = D;
* replace-one: n is public and left out, Δ = D − 1 (one record from w = 1 to w = 0 moves
  every other entry by 1).

The L2 sensitivities (Gaussian noise) are √D and √(D − 1) by the same extreme records
(:func:`second_moment_l2_sensitivity`).

For the Normal family that is (n, Σu, Σu²) with Δ = 3 or 2 (Bernstein & Sheldon, NeurIPS
2018, §3; NeurIPS 2019, §3, sufficient statistics perturbation). The plug-in likelihood is
−(n/2) log 2π − n log σ − (Σx² − 2μΣx + nμ²)/(2σ²), written on the unit scale
(:func:`gaussian_plugin_log_likelihood`); the noise-aware likelihood is the CLT law of the
statistics, MvNormal(n·E t, n·Cov t) with the moments of z zᵀ from Isserlis' theorem
(:func:`gaussian_second_moments`), convolved with the Laplace noise
(:func:`gaussian_release_log_likelihood`). Its two released components (Σu, Σu², n aside)
are read exactly, with no latent variable (:func:`two_component_laplace_log_likelihood`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedLink,
    BoundedStructure,
    check_bounded_values,
    laplace_noise_variance,
    latent_record_count,
    positive_counts,
    to_unit_interval,
)
from pymc_dp.truncated import truncated_normal

__all__ = [
    "NormalFamily",
    "gaussian_plugin_log_likelihood",
    "gaussian_release_log_likelihood",
    "gaussian_second_moments",
    "log_normal_laplace",
    "normal_log_likelihood_bound",
    "normal_record_statistics",
    "normal_tempered_draw",
    "normal_tempered_parameters",
    "project_second_moments",
    "second_moment_l2_sensitivity",
    "second_moment_matrix",
    "second_moment_names",
    "second_moment_pairs",
    "second_moment_sensitivity",
    "second_moment_statistics",
    "two_component_laplace_log_likelihood",
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


# --- Laplace statistics: second moments of z = (1, w) on the unit scale ------------------


def second_moment_pairs(q: int) -> tuple[np.ndarray, np.ndarray]:
    """(j, k), j <= k, of the upper triangle of z zᵀ for z = (1, w_1, …, w_q), row-major.

    Entry 0 is (0, 0) (the record count n); entries 1..q are (0, k) (the sums Σw_k); the rest
    are the cross products Σw_j w_k. D = (q + 1)(q + 2)/2 entries.
    """
    return np.triu_indices(q + 1)


def second_moment_names(variables: list[str]) -> list[str]:
    """Component names of the statistics of w = ``variables``: "n", "sum(a)", "sum(a*b)"."""
    names = ["1", *variables]
    j, k = second_moment_pairs(len(variables))
    out = []
    for a, b in zip(j, k, strict=True):
        if a == 0 and b == 0:
            out.append("n")
        elif a == 0:
            out.append(f"sum({names[b]})")
        else:
            out.append(f"sum({names[a]}*{names[b]})")
    return out


def second_moment_statistics(w: np.ndarray) -> np.ndarray:
    """Upper triangle of Σ_i z_i z_iᵀ, z_i = (1, w_i), shape (D,). Private.

    Parameters
    ----------
    w : ndarray, shape (n, q)
        Records on the unit scale (every entry in [0, 1]).
    """
    w = np.asarray(w, dtype=np.float64)
    z = np.column_stack([np.ones(w.shape[0]), w])
    j, k = second_moment_pairs(w.shape[1])
    return (z.T @ z)[j, k]


def second_moment_sensitivity(q: int, neighbouring: str) -> float:
    """L1 sensitivity of the released second moments of q unit-interval variables.

    Every entry of z zᵀ lies in [0, 1]. add-remove-one: a record adds its D entries, at most
    D (all ones). replace-one: n is public and not released; each of the other D − 1 entries
    moves by at most 1, and w = 1 → w = 0 moves all of them: Δ = D − 1.
    """
    n_entries = (q + 1) * (q + 2) // 2
    return float(n_entries if neighbouring == "add-remove-one" else n_entries - 1)


def second_moment_l2_sensitivity(q: int, neighbouring: str) -> float:
    """L2 sensitivity of the released second moments of q unit-interval variables.

    Every entry of z zᵀ lies in [0, 1], so each released entry moves by at most 1, and
    w = 1 → w = 0 (or adding w = 1) moves every one of them by exactly 1: Δ₂ = √D
    (add-remove-one, all D entries) or √(D − 1) (replace-one, n public). For a regression
    with p covariates (q = p + 1) that is √((p + 2)(p + 3)/2 − 1), against the L1
    sensitivity D − 1 (:func:`second_moment_sensitivity`): the Gaussian's advantage grows
    like √D.
    """
    return math.sqrt(second_moment_sensitivity(q, neighbouring))


def second_moment_matrix(vector, q: int):
    """The symmetric (q + 1, q + 1) matrix of an upper-triangle vector (NumPy or PyTensor)."""
    j, k = second_moment_pairs(q)
    if isinstance(vector, np.ndarray):
        matrix = np.zeros((q + 1, q + 1))
        matrix[j, k] = vector
        matrix[k, j] = vector
        return matrix
    matrix = pt.zeros((q + 1, q + 1))
    matrix = pt.set_subtensor(matrix[j, k], vector)
    return pt.set_subtensor(matrix[k, j], vector)


def project_second_moments(full: np.ndarray, q: int, floor: float) -> np.ndarray:
    """Feasible second moments closest to noisy ones (post-processing), shape (D,).

    n is kept (public) or raised to >= 1; the sums Σw are clipped to [0, n]; the centred
    matrix C = Σ ww − (Σw)(Σw)ᵀ/n (n × the sample covariance, which must be positive
    semi-definite: Σu² ≥ (Σu)²/n for one variable, XᵀX positive semi-definite for the
    covariates) is projected onto the matrices with every eigenvalue >= ``floor`` (the
    Laplace scale b: below it an eigenvalue is indistinguishable from noise, and a singular
    matrix would let σ → 0 in the plug-in likelihood).
    """
    matrix = second_moment_matrix(np.asarray(full, dtype=np.float64), q)
    n = max(float(matrix[0, 0]), 1.0)
    sums = np.clip(matrix[0, 1:], 0.0, n)
    centred = matrix[1:, 1:] - np.outer(sums, sums) / n
    values, vectors = np.linalg.eigh((centred + centred.T) / 2)
    centred = (vectors * np.maximum(values, floor)) @ vectors.T
    matrix[0, 0] = n
    matrix[0, 1:] = matrix[1:, 0] = sums
    matrix[1:, 1:] = centred + np.outer(sums, sums) / n
    j, k = second_moment_pairs(q)
    return matrix[j, k]


def gaussian_second_moments(mean: Variable, cov: Variable, q: int) -> tuple[Variable, Variable]:
    """Mean (D,) and covariance (D, D) of t = upper triangle of z zᵀ, z = (1, w), w ~ N(μ, Σ).

    With μ̄ = (1, μ) and Σ̄ = Σ padded with a zero row and column (z₀ = 1 is constant),
    E[z_j z_k] = Σ̄_jk + μ̄_j μ̄_k and, by Isserlis' theorem (Bernstein & Sheldon 2019, §4),
    Cov(z_i z_j, z_k z_l) = Σ̄_ik Σ̄_jl + Σ̄_il Σ̄_jk + μ̄_i μ̄_k Σ̄_jl + μ̄_i μ̄_l Σ̄_jk
    + μ̄_j μ̄_k Σ̄_il + μ̄_j μ̄_l Σ̄_ik. For q = 1: Var u = s², Cov(u, u²) = 2ms²,
    Var u² = 4m²s² + 2s⁴.
    """
    mu = pt.concatenate([pt.ones((1,)), pt.as_tensor(mean).reshape((q,))])
    sigma = pt.zeros((q + 1, q + 1))
    sigma = pt.set_subtensor(sigma[1:, 1:], pt.as_tensor(cov).reshape((q, q)))
    j, k = second_moment_pairs(q)
    mean_t = sigma[j, k] + mu[j] * mu[k]
    i_, j_ = j[:, None], k[:, None]
    k_, l_ = j[None, :], k[None, :]
    cov_t = (
        sigma[i_, k_] * sigma[j_, l_]
        + sigma[i_, l_] * sigma[j_, k_]
        + mu[i_] * mu[k_] * sigma[j_, l_]
        + mu[i_] * mu[l_] * sigma[j_, k_]
        + mu[j_] * mu[k_] * sigma[i_, l_]
        + mu[j_] * mu[l_] * sigma[i_, k_]
    )
    return mean_t, cov_t


def gaussian_plugin_log_likelihood(
    theta: Variable, sigma: Variable, width: float, table: Variable, q: int
) -> Variable:
    """Σ_i log N(y_i; θᵀz_i, σ²) from the second moments of z = (1, w), w = (x̃, ỹ).

    −(n/2) log 2π − n log(σ̃·width) − (ỹᵀỹ − 2θ̃ᵀZᵀỹ + θ̃ᵀZᵀZθ̃)/(2σ̃²), with everything on
    the unit scale (ỹ = (y − low)/width, σ̃ = σ/width, θ̃ the coefficients of ỹ on
    (1, x̃)); it equals the log-likelihood in the original units exactly (the change of
    variables adds −n log width). ``table`` is the (D,) upper-triangle vector, ỹ last.
    """
    matrix = second_moment_matrix(table, q)
    n = matrix[0, 0]
    zz, zy, yy = matrix[:q, :q], matrix[:q, q], matrix[q, q]
    theta = pt.as_tensor(theta).reshape((q,))
    squares = yy - 2.0 * pt.dot(theta, zy) + pt.dot(theta, pt.dot(zz, theta))
    return -0.5 * n * math.log(2 * math.pi) - n * pt.log(sigma * width) - squares / (2.0 * sigma**2)


# exp-sinh (double-exponential) quadrature of ∫₀^∞ e^{−x} g(x) dx: x = exp(π/2 · sinh t), t on
# a grid of step 0.1 over [−4.2, 1.8] (x from ~1e-22 to ~37; e^{−37} and the mass below 1e-22
# are below 1e-9 of the integral). The rule converges exponentially in 1/step and handles the
# x^{−1/2} endpoint singularity g has when the CLT variance of the first component is ~0
# (Takahasi & Mori 1974); against adaptive quadrature its log error is below 2e-9
# (tests/families/test_bounded_families.py).
_DE_STEP = 0.1
_DE_T = np.arange(-4.2, 1.8 + 1e-9, _DE_STEP)
_DE_X = np.exp(0.5 * np.pi * np.sinh(_DE_T))
_DE_LOG_WEIGHTS = np.log(_DE_STEP) + np.log(_DE_X) + np.log(0.5 * np.pi * np.cosh(_DE_T)) - _DE_X


def log_normal_laplace(x: Variable, variance: Variable, scale: Variable) -> Variable:
    """log of the density at x of N(0, c) ⊛ Laplace(0, b), c = ``variance``, b = ``scale``.

    (1/(4b)) e^{−x²/(2c)} [erfcx(z₋) + erfcx(z₊)] with z± = (c/b ± x)/√(2c). A z < 0 term is
    evaluated as e^{c/(2b²) ± x/b} erfc(z), so neither branch overflows and both have finite
    gradients (the branch not taken gets a harmless input); c is floored at 10⁻¹²·b² (the
    density then differs from the Laplace limit by a relative 10⁻⁶ at most).
    """
    variance = pt.maximum(variance, 1e-12 * scale**2)
    root = pt.sqrt(2.0 * variance)
    terms = []
    for sign in (-1.0, 1.0):
        z = (variance / scale + sign * x) / root
        exponent = variance / (2.0 * scale**2) + sign * x / scale
        positive = pt.switch(pt.ge(z, 0.0), z, 0.0)
        negative = pt.switch(pt.ge(z, 0.0), 0.0, z)
        terms.append(
            pt.switch(
                pt.ge(z, 0.0),
                -(x**2) / (2.0 * variance) + pt.log(pt.erfcx(positive)),
                exponent + pt.log(pt.erfc(negative)),
            )
        )
    return -pt.log(4.0 * scale) + pt.logaddexp(*terms)


def two_component_laplace_log_likelihood(
    values: Variable, mean: Variable, cov: Variable, scale: Variable
) -> Variable:
    """log p(y | θ) of two released components, T ~ N(m, C) (CLT), y = T + Laplace(b) noise.

    Exact: no latent variable. The noise on y₁ is a normal scale mixture, N(0, V) with
    V ~ Exponential(mean 2b²); given V, y₁ ~ N(m₁, C₁₁ + V) and T₂ | y₁ ~ N(μ(V), c(V)) with
    μ(V) = m₂ + C₁₂(y₁ − m₁)/(C₁₁ + V) and c(V) = C₂₂ − C₁₂²/(C₁₁ + V), so y₂ | y₁, V is
    N(μ(V), c(V)) ⊛ Laplace(b) (:func:`log_normal_laplace`). The remaining one-dimensional
    integral over V = 2b²x is taken by exp-sinh quadrature (61 fixed nodes, log error below
    2e-9): log Σ_k w_k N(y₁; m₁, C₁₁ + V_k) (N ⊛ L)(y₂ − μ(V_k)).

    ``values`` (2,), ``mean`` (2,), ``cov`` (2, 2): y, n·E t and n·Cov t of the two released
    components; ``scale`` b. Used for the Normal family's (Σu, Σu²), whose latent-variance
    form put NUTS in a funnel (``docs/calibration.md``).
    """
    variance = 2.0 * scale**2 * _DE_X
    total = cov[0, 0] + variance
    residual = values[0] - mean[0]
    first = -0.5 * pt.log(2.0 * np.pi * total) - residual**2 / (2.0 * total)
    centre = mean[1] + cov[0, 1] * residual / total
    spread = cov[1, 1] - cov[0, 1] ** 2 / total
    second = log_normal_laplace(values[1] - centre, spread, scale)
    return pt.logsumexp(_DE_LOG_WEIGHTS + first + second)


def gaussian_release_log_likelihood(
    name: str,
    mean_t: Variable,
    cov_t: Variable,
    released: Variable,
    released_index: np.ndarray,
    scale: Variable,
    public_n: Variable | None,
    noise: str = "laplace",
) -> Variable:
    """log p(release | parameters) for released second moments, true statistics integrated.

    CLT law of the true statistics T ~ MvNormal(n·E t, n·Cov t) (Bernstein & Sheldon 2018,
    §4; 2019, §4) over the released components R other than n, convolved with the Laplace(b)
    noise. With two such components (the Normal family) exactly, by
    :func:`two_component_laplace_log_likelihood` (no latent variable). With more (the
    regression) the noise is a normal scale mixture, N(0, V) with V ~ Exponential(mean 2b²)
    (``<name>_noise_variance``, sampled with the parameters): release | V ~
    MvNormal(n·E t_R, n·Cov t_RR + diag V). A private n (add-remove-one) is latent
    (``<name>_n_records``, flat prior); its true value is the latent itself, so its release
    is Laplace(n, b) exactly, sampled non-centred
    (:func:`~pymc_dp.families.bounded.latent_record_count`).

    With ``noise="gaussian"`` the noise is N(0, σ²I), σ = ``scale``, known: the release is
    MvNormal(n·E t_R, n·Cov t_RR + σ²I) with no latent variances (the CLT law convolved with
    the Gaussian exactly); a private n is released as Normal(n, σ²).
    """
    index = np.asarray(released_index)
    values = released[0]
    if public_n is None:  # index[0] == 0: the count, released exactly as n + noise
        n = latent_record_count(name, released[:, 0], scale, 1, noise)[0]
        index, values = index[1:], values[1:]
    else:
        n = public_n[0]
    mean = n * mean_t[index]
    clt_cov = n * cov_t[index][:, index]
    if noise != "gaussian" and index.size == 2:
        loglik = two_component_laplace_log_likelihood(values, mean, clt_cov, scale)
    else:
        if noise == "gaussian":
            variance = pt.ones((index.size,)) * scale**2
        else:
            variance = laplace_noise_variance(name, scale, index.size)
        loglik = pm.logp(pm.MvNormal.dist(mu=mean, cov=clt_cov + pt.diag(variance)), values)
    return loglik if public_n is not None else positive_counts(n, loglik)


class _SecondMomentFamily(BoundedFamily):
    """A Gaussian likelihood read through the second moments of z = (1, w), w on [0, 1]^q.

    Subclasses say what w is (:meth:`unit_records`), how the parameters read on the unit
    scale (:meth:`unit_coefficients`) and what the law of w is (:meth:`unit_moments`).
    """

    def q(self, structure: BoundedStructure) -> int:
        return structure.n_covariates + 1

    def unit_records(self, link: BoundedLink) -> np.ndarray:
        """Records on the unit scale, shape (n, q), the observed value last. Private."""
        records = self.records(link)
        structure = link.structure
        y = to_unit_interval(records[0], *structure.bounds)
        if structure.covariate_bounds is None:
            return y[:, None]
        x = to_unit_interval(records[1], *structure.covariate_bounds)
        return np.column_stack([x, y])

    def statistics(self, link: BoundedLink) -> np.ndarray:
        return second_moment_statistics(self.unit_records(link))[None, :]

    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        n_entries = (self.q(structure) + 1) * (self.q(structure) + 2) // 2
        return np.arange(0 if neighbouring == "add-remove-one" else 1, n_entries)

    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        return second_moment_sensitivity(self.q(structure), neighbouring)

    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        return second_moment_l2_sensitivity(self.q(structure), neighbouring)

    def project(self, full: np.ndarray, structure: BoundedStructure, scale: float) -> np.ndarray:
        return project_second_moments(full[0], self.q(structure), floor=float(scale))[None, :]

    def unit_coefficients(self, parameters, structure) -> tuple[Variable, Variable]:
        """(θ̃ (q,), σ̃): the coefficients of ỹ on (1, x̃) and the sd, on the unit scale."""
        raise NotImplementedError

    def unit_moments(self, parameters, structure, name) -> tuple[Variable, Variable]:
        """Mean (q,) and covariance (q, q) of w on the unit scale under the model."""
        raise NotImplementedError

    def plugin_log_likelihood(self, parameters, table, structure) -> Variable:
        theta, sigma = self.unit_coefficients(parameters, structure)
        low, high = structure.bounds
        return gaussian_plugin_log_likelihood(theta, sigma, high - low, table[0], self.q(structure))

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ) -> Variable:
        q = self.q(structure)
        mean_w, cov_w = self.unit_moments(parameters, structure, structure.observed)
        mean_t, cov_t = gaussian_second_moments(mean_w, cov_w, q)
        return gaussian_release_log_likelihood(
            structure.observed,
            mean_t,
            cov_t,
            released,
            self.released_components(structure, neighbouring),
            scale,
            public_n,
            noise,
        )


class NormalFamily(_SecondMomentFamily):
    """Normal(μ, σ) records x ∈ [a, b] (declared), μ and σ scalar graphs (any priors).

    Statistics (n, Σu, Σu²) of u = (x − a)/(b − a); see the module docstring.
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
            f"normal sufficient statistics {what} of u = (x − {low:g})/({high:g} − {low:g}){public}"
        )
