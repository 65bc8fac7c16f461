"""Second moments of bounded records, centred on their declared midpoints, released with ε split.

The Normal family (:mod:`~pymc_dp.families.normal`, unknown mean and sd) and linear regression
(:mod:`~pymc_dp.families.regression`) read a Gaussian likelihood through the second moments of
their records. Both sit on this module: statistics, their sensitivities and budget split, the
projection for plug-in inference and the noise-aware likelihood.

**Statistics.** Values are rescaled by their declared bounds and centred on the bounds'
midpoints: w = (x − lo)/(hi − lo) − ½ ∈ [−½, ½] per variable, q variables (q = 1, the value,
for the Normal; q = p + 1, the p covariates then the response, for the regression). With
z = (1, w) the statistics are the D = (q + 1)(q + 2)/2 entries of the upper triangle of
Σ_i z_i z_iᵀ (:func:`second_moment_statistics`): n, the sums Σw_j and the products Σw_j w_k
(Bernstein & Sheldon, NeurIPS 2018, §3; NeurIPS 2019, §3, sufficient statistics perturbation,
there on the uncentred unit scale). Centring shrinks every entry's range: a sum moves by at
most ½ (add-remove-one) or 1 (replace-one), a product of two variables by ¼ or ½, a square by
¼ either way, against 1 for every entry on [0, 1] (:func:`entry_sensitivity`).

**Budget split.** The entries do not inform the parameters equally: a regression's slopes
are read mostly from X̃ᵀỹ, the sd from ỹᵀỹ. Each released entry j gets a share s_j of ε
(:data:`SHARES`, by block, split equally within a block) and is released as c_j T_j with
c_j = s_j/Δ_j, Δ_j its own range, all with one Laplace (or Gaussian) noise scale b: the noise
on T_j is b/c_j = Δ_j/(s_j ε) when b = 1/ε, as if T_j alone were released with ε s_j. The
weighted vector's L1 sensitivity is at most Σ_j c_j Δ_j = Σ_j s_j = 1 (triangle inequality),
reached under add-remove-one; under replace-one no pair of records moves every entry by its
range at once, and the exact maximum (0.64–0.86 with the default shares,
:func:`replace_one_maximiser`) is used (:func:`second_moment_sensitivity`). The shares were
chosen to minimise the delta-method posterior variance of the slopes (and, at a third of that
weight, of log σ) on the calibration study's regression design (p = 2, σ = 1, n = 10⁴,
ε = 1), and of μ and log σ on the Normal study's; they are public constants, so the
guarantee does not depend on them.

**Reading a release.** Plug-in inference un-weights and projects the release
(:func:`project_second_moments`) and evaluates the exact likelihood of the records from it
(:func:`gaussian_plugin_log_likelihood`). Noise-aware inference uses the CLT law of the true
statistics, MvNormal(n·E t, n·Cov t), with the moments of z zᵀ from Isserlis' theorem
(:func:`gaussian_second_moments`), weighted and convolved with the noise
(:func:`gaussian_release_log_likelihood`): exactly for two released components
(:func:`two_component_laplace_log_likelihood`), through latent noise variances for more.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedLink,
    BoundedStructure,
    laplace_noise_variance,
    latent_record_count,
    positive_counts,
    record_count_initial_offset,
    to_unit_interval,
)

__all__ = [
    "CENTRE",
    "EXACT_UP_TO",
    "ROUND_UP",
    "SHARES",
    "SecondMomentFamily",
    "entry_kinds",
    "entry_sensitivity",
    "gaussian_plugin_log_likelihood",
    "gaussian_release_log_likelihood",
    "gaussian_second_moments",
    "log_normal_laplace",
    "project_second_moments",
    "replace_one_maximiser",
    "second_moment_l2_sensitivity",
    "second_moment_matrix",
    "second_moment_names",
    "second_moment_pairs",
    "second_moment_sensitivity",
    "second_moment_shares",
    "second_moment_statistics",
    "second_moment_weights",
    "two_component_laplace_log_likelihood",
]

CENTRE = 0.5
"""Every variable is centred on its declared midpoint: w = (x − lo)/(hi − lo) − CENTRE."""


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
        Centred records (every entry in [−½, ½]), the response last.
    """
    w = np.asarray(w, dtype=np.float64)
    z = np.column_stack([np.ones(w.shape[0]), w])
    j, k = second_moment_pairs(w.shape[1])
    return (z.T @ z)[j, k]


def entry_kinds(q: int) -> list[str]:
    """The block of each of the D entries, for the budget split (:data:`SHARES`).

    ``"n"``; ``"sum"`` (Σw of a covariate), ``"response sum"``; ``"square"`` and
    ``"product"`` of covariates (XᵀX), ``"response product"`` (Xᵀy), ``"response square"``
    (yᵀy). The last of the q variables is the response.
    """
    kinds = []
    for a, b in zip(*second_moment_pairs(q), strict=True):
        if a == 0 and b == 0:
            kinds.append("n")
        elif a == 0:
            kinds.append("response sum" if b == q else "sum")
        elif b == q:
            kinds.append("response square" if a == q else "response product")
        else:
            kinds.append("square" if a == b else "product")
    return kinds


def entry_sensitivity(q: int, neighbouring: str) -> np.ndarray:
    """Largest change of each entry of z zᵀ when one record changes, shape (D,).

    With every w in [−½, ½]: add-remove-one adds or removes z zᵀ, so an entry moves by its
    largest magnitude — n by 1, a sum by ½, a product or a square by ¼. replace-one changes
    z zᵀ to z′z′ᵀ: n stays (0: it is public and not released), a sum moves by at most 1,
    a product w_j w_k ∈ [−¼, ¼] by ½, a square w_j² ∈ [0, ¼] by ¼.
    """
    add = neighbouring == "add-remove-one"
    table = {
        "n": 1.0 if add else 0.0,
        "sum": 0.5 if add else 1.0,
        "response sum": 0.5 if add else 1.0,
        "product": 0.25 if add else 0.5,
        "response product": 0.25 if add else 0.5,
        "square": 0.25,
        "response square": 0.25,
    }
    return np.array([table[kind] for kind in entry_kinds(q)])


SHARES = {
    "regression": {
        "sum": 0.09,
        "response sum": 0.14,
        "square": 0.13,  # with "product": XᵀX
        "response product": 0.46,
        "response square": 0.18,
    },
    "normal": {"response sum": 0.3, "response square": 0.7},
    "n": 0.05,
}
"""Shares of ε by block (module docstring), public constants. ``"regression"`` (q ≥ 2):
the covariates' sums, XᵀX (squares and products share one block), Xᵀy, Σy and yᵀy;
``"normal"`` (q = 1): Σu and Σu². Under add-remove-one n is released too and takes
``SHARES["n"]``, the rest scaled by 1 − that. Chosen on the calibration study's designs by
the delta-method variance of the estimates (which the sampled noise-aware widths match:
``docs/calibration.md``). Regression, p = 2, σ = 1, n = 10⁴, ε = 1, covariates from the
study's prior: the slopes' median width ratio (private / non-private) is 4.0 and σ's 4.4,
against 8.4 and 10.2 with equal shares and the triangle bound; with uniform covariates on
their bounds 1.9 and 4.2 (re-optimising the shares for each design moved these by under
10%). Normal, μ ~ N(0, 1), σ = 1 on [−12, 12]: σ's 2.4 and μ's 1.4 (11.6 for σ with the
shares equal)."""


def second_moment_shares(q: int, neighbouring: str) -> np.ndarray:
    """Share of ε of each of the D entries (0 for n when it is public); they sum to 1."""
    kinds = entry_kinds(q)
    blocks = dict(SHARES["normal"] if q == 1 else SHARES["regression"])
    if q > 1:
        blocks["product"] = blocks["square"]  # one block, XᵀX
    members = {}
    for kind in kinds:
        key = "square" if kind == "product" else kind
        members[key] = members.get(key, 0) + 1
    add = neighbouring == "add-remove-one"
    shares = np.zeros(len(kinds))
    for i, kind in enumerate(kinds):
        if kind == "n":
            shares[i] = SHARES["n"] if add else 0.0
        else:
            key = "square" if kind == "product" else kind
            shares[i] = blocks[key] / members[key] * ((1.0 - SHARES["n"]) if add else 1.0)
    return shares


def second_moment_weights(q: int, neighbouring: str) -> np.ndarray:
    """c_j = s_j/Δ_j: the release is c ⊙ T + noise (0 where an entry is not released)."""
    shares = second_moment_shares(q, neighbouring)
    ranges = entry_sensitivity(q, neighbouring)
    weights = np.zeros_like(shares)
    released = ranges > 0
    weights[released] = shares[released] / ranges[released]
    return weights


def replace_one_maximiser(q: int, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact max over replaced records of Σ_j c_j |t_j(w) − t_j(w′)|, and where it is reached.

    Every entry of t = upper triangle of z zᵀ, z = (1, w), is a product of at most two
    coordinates. With d_k = w_k − w′_k and s_k = w_k + w′_k (so w, w′ ∈ [−½, ½]^q is
    |d_k| + |s_k| ≤ 1 for every k), a sum changes by d_k, a square by d_k s_k and a product
    by (d_j s_k + s_j d_k)/2. For fixed s the objective is convex in d (a sum of absolute
    values of linear functions) over the box |d_k| ≤ 1 − |s_k|, so its maximum is at a
    corner, |d_k| = 1 − a_k with a_k = |s_k|; taking sign(d_k) = sign(s_k) for every k makes
    every product's two terms agree in sign, so all entries reach their largest magnitude
    at once. What is left is the quadratic

        G(a) = Σ_k c_k (1 − a_k) + Σ_k c_kk (1 − a_k) a_k
               + Σ_{j<k} (c_jk / 2) (a_j + a_k − 2 a_j a_k),   a ∈ [0, 1]^q,

    whose maximum over the box is found exactly by enumerating its KKT points: every
    coordinate at 0, at 1, or where its partial derivative vanishes (a linear system in the
    free coordinates; a singular system's stationary set is flat in G, so its maximum is
    also reached where one more coordinate is at a bound, an enumerated case). 3^q cases.
    The maximiser a* gives a worst-case pair: w = (½, …, ½) and w′ = a* − ½.

    Returns
    -------
    (float, ndarray of shape (q,))
        The maximum and a*.
    """
    const, linear, hessian = 0.0, np.zeros(q), np.zeros((q, q))
    for (j, k), c in zip(zip(*second_moment_pairs(q), strict=True), weights, strict=True):
        if j == 0 and k == 0:
            continue
        if j == 0:  # Σw_k: c (1 − a_k)
            const += c
            linear[k - 1] -= c
        elif j == k:  # Σw_k²: c (1 − a_k) a_k
            linear[k - 1] += c
            hessian[k - 1, k - 1] -= 2.0 * c
        else:  # Σw_j w_k: (c/2)(a_j + a_k − 2 a_j a_k)
            linear[j - 1] += c / 2.0
            linear[k - 1] += c / 2.0
            hessian[j - 1, k - 1] -= c
            hessian[k - 1, j - 1] -= c
    best, argbest = -np.inf, np.zeros(q)
    for pattern in itertools.product((0, 1, 2), repeat=q):
        a = np.array([float(p) if p < 2 else 0.0 for p in pattern])
        free = [i for i, p in enumerate(pattern) if p == 2]
        if free:
            fixed = [i for i, p in enumerate(pattern) if p < 2]
            rhs = -linear[free] - hessian[np.ix_(free, fixed)] @ a[fixed]
            try:
                a[free] = np.linalg.solve(hessian[np.ix_(free, free)], rhs)
            except np.linalg.LinAlgError:
                continue
            if np.any(a[free] < 0.0) or np.any(a[free] > 1.0):
                continue
        value = const + linear @ a + 0.5 * a @ hessian @ a
        if value > best:
            best, argbest = float(value), a
    return best, argbest


EXACT_UP_TO = 8
"""Largest q (p = 7 covariates) whose replace-one sensitivity is the exact maximum; beyond
it the 3^q cases take seconds, and the triangle bound 1 is used (valid, 1.6× the exact
maximum at most)."""

ROUND_UP = 1.0 + 1e-14
"""Stated sensitivities are rounded up by this factor: the weights, their products and the
enumeration are computed in floating point, a few ulps (~1e-16 relative) from the exact
values (an attack on this change found the exact maximum up to 2e-16 above the computed one)."""


@functools.lru_cache(maxsize=64)
def second_moment_sensitivity(q: int, neighbouring: str) -> float:
    """L1 sensitivity of the released, weighted second moments c ⊙ T (module docstring).

    add-remove-one: Σ_j c_j Δ_j = Σ_j s_j = 1, the record w = (½, …, ½) having every entry
    at its largest magnitude at once. replace-one: the exact maximum of
    :func:`replace_one_maximiser` for q ≤ :data:`EXACT_UP_TO`, below the triangle bound 1
    because no pair of records moves every entry by its range at once; the triangle bound
    beyond. With the default shares: the Normal (q = 1) (c₁ + c₂)²/(4c₂) = 3.1²/11.2 ≈ 0.858
    (c = (0.3, 2.8)); the regression 0.662 (p = 1), 0.640 (p = 2), 0.629 (p = 3). Rounded
    up by :data:`ROUND_UP`. Depends on public constants only (cached).
    """
    weights = second_moment_weights(q, neighbouring)
    if neighbouring == "add-remove-one" or q > EXACT_UP_TO:
        value = float(np.sum(weights * entry_sensitivity(q, neighbouring)))
    else:
        value = replace_one_maximiser(q, weights)[0]
    return value * ROUND_UP


def second_moment_l2_sensitivity(q: int, neighbouring: str) -> float:
    """L2 sensitivity of the released, weighted second moments c ⊙ T (Gaussian noise).

    Each weighted entry moves by at most c_j Δ_j = s_j, so Δ₂ ≤ √(Σ_j s_j²) (reached under
    add-remove-one by the record at every upper bound). Against the L1 sensitivity 1 the
    Gaussian's advantage grows with the number of entries.
    """
    weights = second_moment_weights(q, neighbouring)
    moves = weights * entry_sensitivity(q, neighbouring)
    return float(math.sqrt(np.sum(moves**2))) * ROUND_UP


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
    """Feasible centred second moments closest to noisy (un-weighted) ones, shape (D,).

    Post-processing. n is kept (public) or raised to >= 1; the sums Σw are clipped to
    [−n/2, n/2]; the centred matrix C = Σ ww − (Σw)(Σw)ᵀ/n (n × the sample covariance, which
    must be positive semi-definite) is projected onto the matrices with every eigenvalue
    >= ``floor`` (the noise scale of the squares: below it an eigenvalue is
    indistinguishable from noise, and a singular matrix would let σ → 0 in the plug-in
    likelihood).
    """
    matrix = second_moment_matrix(np.asarray(full, dtype=np.float64), q)
    n = max(float(matrix[0, 0]), 1.0)
    sums = np.clip(matrix[0, 1:], -CENTRE * n, CENTRE * n)
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
    """Σ_i log N(y_i; θᵀz_i, σ²) from the second moments of z = (1, w), w = (x̃, ỹ) centred.

    −(n/2) log 2π − n log(σ̃·width) − (ỹᵀỹ − 2θᵀZᵀỹ + θᵀZᵀZθ)/(2σ̃²), with everything on
    the centred unit scale (ỹ = (y − low)/width − ½, σ̃ = σ/width, θ the coefficients of ỹ
    on (1, x̃)); it equals the log-likelihood in the original units exactly (the change of
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

    ``values`` (…, 2), ``mean`` (…, 2), ``cov`` (…, 2, 2): y, n·E t and n·Cov t of the two
    released components, with any leading (group) axes; ``scale`` b. Returns one log density
    per leading index (a scalar for one group). Used for the Normal family's (Σu, Σu²),
    whose latent-variance form put NUTS in a funnel (``docs/calibration.md``), per group when
    the mean is read per group.
    """
    variance = 2.0 * scale**2 * _DE_X
    total = cov[..., 0, 0, None] + variance
    residual = (values[..., 0] - mean[..., 0])[..., None]
    first = -0.5 * pt.log(2.0 * np.pi * total) - residual**2 / (2.0 * total)
    centre = mean[..., 1, None] + cov[..., 0, 1, None] * residual / total
    spread = cov[..., 1, 1, None] - cov[..., 0, 1, None] ** 2 / total
    second = log_normal_laplace(values[..., 1, None] - centre, spread, scale)
    return pt.logsumexp(_DE_LOG_WEIGHTS + first + second, axis=-1)


def gaussian_release_log_likelihood(
    name: str,
    mean_t: Variable,
    cov_t: Variable,
    released: Variable,
    released_index: np.ndarray,
    weights: np.ndarray,
    scale: Variable,
    public_n: Variable | None,
    noise: str = "laplace",
) -> Variable:
    """log p(release | parameters) for released weighted second moments, T integrated out.

    The release is R = c_R ⊙ T_R + noise, every component with the same noise scale b
    (``weights`` c, (D,)). CLT law of the true statistics T ~ MvNormal(n·E t, n·Cov t)
    (Bernstein & Sheldon 2018, §4; 2019, §4), so c_R ⊙ T_R ~ MvNormal(c ⊙ n·E t,
    (c cᵀ) ⊙ n·Cov t), convolved with the Laplace(b) noise. With two such components (the
    Normal family) exactly, by :func:`two_component_laplace_log_likelihood` (no latent
    variable). With more (the regression) the noise is a normal scale mixture, N(0, V) with
    V ~ Exponential(mean 2b²) (``<name>_noise_variance``, sampled with the parameters):
    R | V ~ MvNormal(c ⊙ n·E t_R, (c cᵀ) ⊙ n·Cov t_RR + diag V). A private n
    (add-remove-one) is latent (``<name>_n_records``, flat prior): its release is
    c₀ n + Laplace(b), so Laplace(n, b/c₀) exactly, sampled non-centred
    (:func:`~pymc_dp.families.bounded.latent_record_count`).

    With ``noise="gaussian"`` the noise is N(0, σ²I), σ = ``scale``, known: R is
    MvNormal(c ⊙ n·E t_R, (c cᵀ) ⊙ n·Cov t_RR + σ²I) with no latent variances (the CLT law
    convolved with the Gaussian exactly); a private n is released as Normal(c₀ n, σ²).
    """
    index = np.asarray(released_index)
    weights = np.asarray(weights, dtype=np.float64)
    values = released[0]
    if public_n is None:  # index[0] == 0: the count, released exactly as c₀ n + noise
        c0 = float(weights[0])
        n = latent_record_count(name, released[:, 0] / c0, scale / c0, 1, noise)[0]
        index, values = index[1:], values[1:]
    else:
        n = public_n[0]
    c = weights[index]
    mean = n * mean_t[index] * c
    clt_cov = n * cov_t[index][:, index] * np.outer(c, c)
    if noise != "gaussian" and index.size == 2:
        loglik = two_component_laplace_log_likelihood(values, mean, clt_cov, scale)
    else:
        if noise == "gaussian":
            variance = pt.ones((index.size,)) * scale**2
        else:
            variance = laplace_noise_variance(name, scale, index.size)
        loglik = pm.logp(pm.MvNormal.dist(mu=mean, cov=clt_cov + pt.diag(variance)), values)
    return loglik if public_n is not None else positive_counts(n, loglik)


class SecondMomentFamily(BoundedFamily):
    """A Gaussian likelihood read through the centred second moments of z = (1, w).

    Subclasses say what the records are (``records``), how the parameters read on the
    unit scale (:meth:`unit_coefficients`) and what the law of the unit-scale records is
    (:meth:`unit_moments`); centring, the budget split and the readings live here.
    """

    compiles_to_jax: ClassVar[bool] = True  # fixed shapes: 61 quadrature nodes, a (D, D) MvNormal

    def q(self, structure: BoundedStructure) -> int:
        return structure.n_covariates + 1

    def unit_records(self, link: BoundedLink) -> np.ndarray:
        """Records on the unit scale [0, 1], shape (n, q), the observed value last. Private."""
        records = self.records(link)
        structure = link.structure
        y = to_unit_interval(records[0], *structure.bounds)
        if structure.covariate_bounds is None:
            return y[:, None]
        x = to_unit_interval(records[1], *structure.covariate_bounds)
        return np.column_stack([x, y])

    def statistics(self, link: BoundedLink) -> np.ndarray:
        return second_moment_statistics(self.unit_records(link) - CENTRE)[None, :]

    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        n_entries = (self.q(structure) + 1) * (self.q(structure) + 2) // 2
        return np.arange(0 if neighbouring == "add-remove-one" else 1, n_entries)

    def weights(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        return second_moment_weights(self.q(structure), neighbouring)

    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        return second_moment_sensitivity(self.q(structure), neighbouring)

    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        return second_moment_l2_sensitivity(self.q(structure), neighbouring)

    def project(
        self, full: np.ndarray, structure: BoundedStructure, scale: float, neighbouring: str
    ) -> np.ndarray:
        # the largest noise scale b/c_j of a diagonal entry (Σw_j²)
        q = self.q(structure)
        weights = self.weights(structure, neighbouring)
        diagonal = [i for i, kind in enumerate(entry_kinds(q)) if kind.endswith("square")]
        floor = float(scale) / float(np.min(weights[diagonal]))
        return project_second_moments(full[0], q, floor=floor)[None, :]

    def unit_coefficients(self, parameters, structure) -> tuple[Variable, Variable]:
        """(θ̃ (q,), σ̃): the coefficients of ỹ on (1, x̃) and the sd, on the unit scale."""
        raise NotImplementedError

    def unit_moments(self, parameters, structure, name) -> tuple[Variable, Variable]:
        """Mean (q,) and covariance (q, q) of (x̃, ỹ) on the unit scale under the model."""
        raise NotImplementedError

    def plugin_log_likelihood(self, parameters, table, structure) -> Variable:
        theta, sigma = self.unit_coefficients(parameters, structure)
        theta = pt.as_tensor(theta).reshape((self.q(structure),))
        # ỹ − ½ = (θ₀ − ½ + ½ Σ_k θ_k) + Σ_k θ_k (x̃_k − ½): the centred intercept
        intercept = theta[0] - CENTRE + CENTRE * pt.sum(theta[1:])
        centred = pt.concatenate([pt.as_tensor(intercept).reshape((1,)), theta[1:]])
        low, high = structure.bounds
        return gaussian_plugin_log_likelihood(
            centred, sigma, high - low, table[0], self.q(structure)
        )

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ) -> Variable:
        q = self.q(structure)
        mean_w, cov_w = self.unit_moments(parameters, structure, structure.observed)
        mean_t, cov_t = gaussian_second_moments(mean_w - CENTRE, cov_w, q)
        return gaussian_release_log_likelihood(
            structure.observed,
            mean_t,
            cov_t,
            released,
            self.released_components(structure, neighbouring),
            self.weights(structure, neighbouring),
            scale,
            public_n,
            noise,
        )

    def initial_values(self, release) -> dict[str, np.ndarray]:
        """A private n (add-remove-one, or per cell) starts where every latent count is ≥ 1
        (:func:`~pymc_dp.families.bounded.record_count_initial_offset`): a cell of few
        records has a released count near or below 0."""
        if release.public_n is not None:
            return {}
        structure = release.structure
        c0 = float(self.weights(structure, release.neighbouring)[0])
        noisy = np.asarray(release.noisy, dtype=np.float64).reshape(structure.n_groups, -1)
        offset = record_count_initial_offset(noisy[:, 0] / c0, release.scale / c0)
        return {f"{release.observed}_n_records_offset": offset}

    def describe_split(self, structure: BoundedStructure, neighbouring: str) -> str:
        """The budget split in words, for the ledger: the share of ε of each block."""
        q = self.q(structure)
        shares = self.weights(structure, neighbouring) * entry_sensitivity(q, neighbouring)
        totals: dict[str, float] = {}
        for kind, share in zip(entry_kinds(q), shares, strict=True):
            if share > 0:
                key = "square" if kind == "product" else kind
                totals[key] = totals.get(key, 0.0) + float(share)
        label = _BLOCK_LABELS_NORMAL if q == 1 else _BLOCK_LABELS_REGRESSION
        parts = ", ".join(f"{label[k]} {v:.0%}" for k, v in totals.items())
        return (
            f"centred on the bounds' midpoints; ε split {parts} (each entry weighted by its "
            "share over its range, one noise scale)"
        )


_BLOCK_LABELS_NORMAL = {"n": "n", "response sum": "Σu", "response square": "Σu²"}
_BLOCK_LABELS_REGRESSION = {
    "n": "n",
    "sum": "Σx̃",
    "response sum": "Σỹ",
    "square": "X̃ᵀX̃",
    "response product": "X̃ᵀỹ",
    "response square": "ỹᵀỹ",
}
