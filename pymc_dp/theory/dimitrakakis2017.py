"""Dimitrakakis, Nelson, Zhang, Mitrokotsa & Rubinstein: posterior sampling under Lipschitz
likelihoods.

"Bayesian Differential Privacy through Posterior Sampling" (JMLR version, cited as
*Dimitrakakis et al.*). This module holds closed-form calculators for:

* the privacy of N posterior samples under Assumption 1 (ℓ(θ) <= L): ε = 2NL (Theorem 8.1,
  Theorem 17(a); the printed Corollary 10.1 is corrected), and its inverse;
* the per-family Lipschitz constants ℓ(θ) (eq. 2) and L of Example 1 and Lemmas 19-24;
* Example 1 / Figure 1 (the finite Bernoulli family) and the mass ξ(Θ_L) of L-Lipschitz
  parameters (eq. 4);
* Assumption 2 (stochastic Lipschitz continuity, constants c, L₀, C; eq. 5 and 9): the δ of
  Theorem 8.2, the failure probability of Corollary 9, the KL robustness of Theorem 7 and the
  constants of Lemmas 19, 21 and 22;
* distinguishability (Theorem 13) and the utility gap of Lemma 11.

Privacy losses under the paper's generalised definition (Definition 2) are *per unit of the
dataset pseudo-metric ρ*; a classical-DP claim needs the largest ρ between neighbouring
datasets (e.g. ρ = 1 for Hamming distance). Where a printed formula is wrong the corrected form
is implemented and the docstring says so; where it is suspect but no correction is known it is
transcribed as printed and flagged. The guarantees here are calculators: no mechanism of
pymc_dp depends on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from pymc_dp.families.dirichlet import categorical_log_likelihood_bound
from pymc_dp.ledger import validate_epsilon
from pymc_dp.theory._checks import (
    interval,
    non_negative,
    open_unit,
    positive,
    positive_int,
    warn_if_vacuous,
)

__all__ = [
    "Assumption2Constants",
    "bayesian_network_classical_epsilon",
    "bayesian_network_lipschitz",
    "bernoulli_lipschitz",
    "bernoulli_lipschitz_bound",
    "beta_binomial_assumption2_constants",
    "binomial_lipschitz",
    "categorical_lipschitz_bound",
    "distinguishability_threshold",
    "distinguishability_threshold_stochastic",
    "example1_family",
    "exponential_assumption2_constants",
    "exponential_lipschitz",
    "kl_robustness_bound",
    "kl_robustness_bound_stochastic",
    "laplace_lipschitz",
    "lipschitz_mass",
    "max_posterior_samples",
    "multivariate_normal_lipschitz",
    "normal_known_mean_assumption2_constants",
    "normal_known_mean_lipschitz",
    "posterior_sampling_epsilon",
    "psaqr_utility_gap",
    "random_dp_failure_probability",
    "stochastic_lipschitz_c",
    "stochastic_posterior_delta",
]


# --------------------------------------------------------------------------------------------
# Dimitrakakis et al.: privacy of posterior sampling under Assumption 1
# --------------------------------------------------------------------------------------------


def posterior_sampling_epsilon(lipschitz: float, n_samples: int = 1) -> float:
    """ε = 2·N·L of releasing N exact posterior samples under Assumption 1.

    One posterior sample is (2L, 0)-DP under the pseudo-metric ρ (Dimitrakakis et al.,
    Theorem 8.1); N i.i.d. samples compose to (2NL, 0) (Theorem 4; Theorem 17(a); Claim 1).
    **Correction:** Corollary 10.1 prints "(2L, 0)" for Algorithm 1 with N samples; that holds
    only for N = 1, and 2NL is implemented here.

    Parameters
    ----------
    lipschitz : float
        L > 0, in nats per unit of ρ: a bound on ℓ(θ) over the support of the prior
        (Assumption 1, eq. 3).
    n_samples : int, default 1
        N >= 1, the number of posterior draws released.

    Returns
    -------
    float
        ε in nats per unit of ρ (multiply by the largest ρ between neighbours for classical DP).

    Raises
    ------
    ValueError
        If L is not finite and > 0 or N is not an integer >= 1.
    """
    lipschitz = positive(lipschitz, "lipschitz")
    return 2.0 * positive_int(n_samples, "n_samples") * lipschitz


def max_posterior_samples(epsilon: float, lipschitz: float) -> int:
    """Largest N with 2NL <= ε: the number of posterior draws a budget buys.

    The inverse of :func:`posterior_sampling_epsilon` (derived from Dimitrakakis et al.,
    Theorem 17(a)); 0 means even one draw overspends.

    Parameters
    ----------
    epsilon : float
        Budget ε > 0, in nats per unit of ρ.
    lipschitz : float
        L > 0 (Assumption 1).

    Returns
    -------
    int
        ⌊ε / (2L)⌋ (with a relative tolerance of 1e-12 for round-off).

    Raises
    ------
    ValueError
        If ε or L is not finite and > 0.
    """
    ratio = validate_epsilon(epsilon) / (2.0 * positive(lipschitz, "lipschitz"))
    return math.floor(ratio * (1.0 + 1e-12))


# --------------------------------------------------------------------------------------------
# Dimitrakakis et al.: per-family Lipschitz constants ℓ(θ) and L
# --------------------------------------------------------------------------------------------


def bernoulli_lipschitz(theta: float) -> float:
    """ℓ(θ) = |ln(θ/(1-θ))| of a Bernoulli(θ) likelihood under the Hamming metric.

    Dimitrakakis et al., Example 1 (ℓ from the definition, eq. 2): ln P_θ(1) - ln P_θ(0) =
    logit θ for one observation; Lemma 5 lifts it to i.i.d. sequences with ρ the Hamming
    distance.

    Parameters
    ----------
    theta : float
        Success probability, 0 < θ < 1 (θ ∈ {0, 1} has ℓ = ∞).

    Returns
    -------
    float
        ℓ(θ) in nats per changed observation.

    Raises
    ------
    ValueError
        If θ is not in (0, 1).
    """
    theta = open_unit(theta, "theta")
    return abs(math.log(theta) - math.log1p(-theta))


def bernoulli_lipschitz_bound(lower: float, upper: float | None = None) -> float:
    """L = sup ℓ(θ) of a Bernoulli family with θ restricted to [lower, upper].

    Dimitrakakis et al., Example 1 and Assumption 1: with a prior truncated to [a₀, 1-a₀],
    L = ln((1-a₀)/a₀). (For the finite grid θ_k = kΔ the paper prints L = ln(1/Δ), an upper
    bound on the exact ln((1-Δ)/Δ) returned for ``lower = Δ``.)

    Parameters
    ----------
    lower : float
        a₀, with 0 < a₀ < 1.
    upper : float, optional
        Upper end of the support, lower < upper < 1; defaults to 1 - a₀ (then a₀ < 1/2).

    Returns
    -------
    float
        L = max(|logit lower|, |logit upper|), in nats per changed observation.

    Raises
    ------
    ValueError
        If the bounds are not 0 < lower < upper < 1.
    """
    lower = open_unit(lower, "lower")
    upper = 1.0 - lower if upper is None else open_unit(upper, "upper")
    if not lower < upper:
        raise ValueError(f"need lower < upper, got lower={lower!r}, upper={upper!r}")
    return max(bernoulli_lipschitz(lower), bernoulli_lipschitz(upper))


def categorical_lipschitz_bound(min_probability: float, n_categories: int) -> float:
    """L = ln((1-(K-1)a₀)/a₀) of a Categorical(p) family with every p_j >= a₀.

    Dimitrakakis et al., Lemma 24, eq. 16 (a single node with no parents): the bound is
    max_{i,j} |ln(p_i/p_j)|, attained with one probability 1-(K-1)a₀ and another a₀. This is the
    exact supremum; Lemma 24's L = ln(1/a₀) (:func:`bayesian_network_lipschitz`) is an upper
    bound on it. For K = 2 it equals :func:`bernoulli_lipschitz_bound`.

    Parameters
    ----------
    min_probability : float
        a₀, the lower bound of every category probability (truncated Dirichlet prior),
        0 < a₀ < 1/K.
    n_categories : int
        K >= 2.

    Returns
    -------
    float
        L in nats per changed observation (Hamming metric).

    Raises
    ------
    ValueError
        If K < 2 or a₀ is not in (0, 1/K).
    """
    # the same supremum as Foulds et al.'s log-likelihood bound Δ (eq. 15 generalised)
    return categorical_log_likelihood_bound(min_probability, n_categories)


def bayesian_network_lipschitz(min_probability: float) -> float:
    """L = ln(1/ε) of a discrete Bayesian network whose conditional probabilities are >= ε.

    Dimitrakakis et al., Lemma 24: Assumption 1 holds with L = ln(1/ε) under the metric
    ρ(x, y) = vᵀδ(x, y), where δ_k counts the samples in which variable k differs and
    v_k = 1 + out-degree(k). Covers categorical/multinomial data (one node) and Markov chains.

    Parameters
    ----------
    min_probability : float
        ε = min over θ, x_k, x_parents of P_θ(x_k | x_parents), 0 < ε < 1.

    Returns
    -------
    float
        L in nats per unit of ρ.

    Raises
    ------
    ValueError
        If ε is not in (0, 1).
    """
    return -math.log(open_unit(min_probability, "min_probability"))


def bayesian_network_classical_epsilon(
    min_probability: float,
    out_degrees: Sequence[int],
    *,
    whole_record: bool = False,
) -> float:
    """Classical ε of one posterior sample of a discrete Bayesian network.

    Dimitrakakis et al., Lemma 24: the posterior is (2 ln(1/ε), 0)-DP under ρ = vᵀδ and
    2‖v‖_∞ ln(1/ε)-DP classically, v_k = 1 + out-degree(k). For a Markov chain (each x_t a node
    with out-degree 1) this is the paper's 4 ln(1/ε). The ‖v‖_∞ conversion assumes neighbours
    differ in a *single variable*; if a whole sample x^t (all K variables) can change, ρ can
    reach Σ_k v_k (digest note, not in the paper) — pass ``whole_record=True`` for that bound.

    Parameters
    ----------
    min_probability : float
        ε, the smallest conditional probability, 0 < ε < 1.
    out_degrees : sequence of int
        Out-degree of every node (each >= 0).
    whole_record : bool, default False
        Use Σ_k v_k instead of max_k v_k.

    Returns
    -------
    float
        ε_classical = 2 · (max or sum of v) · ln(1/ε), for one posterior sample.

    Raises
    ------
    ValueError
        If ε is not in (0, 1) or the out-degrees are empty or not non-negative integers.
    """
    lipschitz = bayesian_network_lipschitz(min_probability)
    degrees = list(out_degrees)
    if not degrees or any(
        isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in degrees
    ):
        raise ValueError(f"out_degrees must be non-empty integers >= 0, got {out_degrees!r}")
    v = [1 + int(d) for d in degrees]
    return 2.0 * (sum(v) if whole_record else max(v)) * lipschitz


def binomial_lipschitz(theta: float, n_trials: int) -> float:
    """ℓ(θ) = ln n + |logit θ| of a Binomial(n, θ) count under ρ = |k₁ - k₂|.

    Dimitrakakis et al., Lemma 21 (proof, App. B): ln n bounds the chord slopes of
    ln C(n, k) and |logit θ| the slope of k·logit θ.

    Parameters
    ----------
    theta : float
        Success probability, 0 < θ < 1.
    n_trials : int
        n >= 1.

    Returns
    -------
    float
        ℓ(θ) in nats per unit change of the count.

    Raises
    ------
    ValueError
        If θ is not in (0, 1) or n is not an integer >= 1.
    """
    return math.log(positive_int(n_trials, "n_trials")) + bernoulli_lipschitz(theta)


def exponential_lipschitz(rate: float) -> float:
    """ℓ(θ) = θ of an Exponential(rate θ) likelihood under ρ(x, y) = |x - y|.

    Dimitrakakis et al., Lemma 19: |ln p_θ(x) - ln p_θ(y)| = θ|x - y|. With a prior trimmed to
    [c₁, c₂], L = c₂.

    Parameters
    ----------
    rate : float
        θ > 0, in 1/(data unit).

    Returns
    -------
    float
        ℓ(θ) in nats per data unit.

    Raises
    ------
    ValueError
        If θ is not finite and > 0.
    """
    return positive(rate, "rate")


def laplace_lipschitz(scale: float) -> float:
    """ℓ = 1/s of a Laplace(μ, s) likelihood under ρ(x, y) = |x - y|.

    Dimitrakakis et al., Lemma 20 (proof): |ln p(x₁) - ln p(x₂)| <= |x₁ - x₂| / s.

    Parameters
    ----------
    scale : float
        s > 0, in data units.

    Returns
    -------
    float
        ℓ in nats per data unit.

    Raises
    ------
    ValueError
        If s is not finite and > 0.
    """
    return 1.0 / positive(scale, "scale")


def normal_known_mean_lipschitz(precision: float, mean: float) -> float:
    """ℓ = max{|μ|, 1}·θ/2 of N(μ, 1/θ) with known mean, under ρ = |x²-y²| + 2|x-y|.

    Dimitrakakis et al., Lemma 22 (proof): ½θ|(x-μ)² - (y-μ)²| <= (max{|μ|,1}/2)·θ·ρ(x, y).
    For data in [0, 1] the largest ρ between two values is 3.

    Parameters
    ----------
    precision : float
        θ = 1/σ² > 0.
    mean : float
        The known mean μ (finite).

    Returns
    -------
    float
        ℓ in nats per unit of ρ.

    Raises
    ------
    ValueError
        If θ is not finite and > 0 or μ is not finite.
    """
    precision = positive(precision, "precision")
    mean = float(mean)
    if not math.isfinite(mean):
        raise ValueError(f"mean must be finite, got {mean!r}")
    return max(abs(mean), 1.0) * precision / 2.0


def multivariate_normal_lipschitz(
    precision: np.ndarray | Sequence[Sequence[float]], mean: Sequence[float] | None = None
) -> float:
    """L = ½‖A‖_F·max{1, ‖μ‖₂} of N(μ, A⁻¹) (Assumption 1).

    Dimitrakakis et al., Lemma 23: with ‖A‖_F = (Σ λ_i²)^{1/2}, L holds under
    ρ(x, y) = ‖xxᵀ - yyᵀ‖_F + 2‖x - y‖₂; for μ = 0 (``mean=None``), L = ½‖A‖_F under
    ρ(x, y) = ‖xxᵀ - yyᵀ‖_F. This is for one fixed (μ, A); for a family take the sup over the
    prior support (which must be bounded).

    Parameters
    ----------
    precision : (d, d) array_like
        Symmetric positive-definite precision matrix A.
    mean : (d,) array_like, optional
        The mean μ; ``None`` means μ = 0.

    Returns
    -------
    float
        L in nats per unit of ρ.

    Raises
    ------
    ValueError
        If A is not a finite, square, symmetric positive-definite matrix, or μ has the wrong
        shape or is not finite.
    """
    a = np.asarray(precision, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"precision must be a non-empty square matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or not np.allclose(a, a.T):
        raise ValueError("precision must be a finite symmetric matrix")
    if np.linalg.eigvalsh(a).min() <= 0:
        raise ValueError("precision must be positive definite")
    scale = 1.0
    if mean is not None:
        mu = np.asarray(mean, dtype=float)
        if mu.shape != (a.shape[0],) or not np.all(np.isfinite(mu)):
            raise ValueError(f"mean must be a finite vector of length {a.shape[0]}")
        scale = max(1.0, float(np.linalg.norm(mu)))
    return 0.5 * float(np.linalg.norm(a, "fro")) * scale


# --------------------------------------------------------------------------------------------
# Dimitrakakis et al.: Example 1 / Figure 1 and the mass of L-Lipschitz parameters
# --------------------------------------------------------------------------------------------


def example1_family(
    step: float, prior: Literal["uniform", "exponential"] = "uniform"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The finite Bernoulli family of Dimitrakakis et al., Example 1 (and Figure 1).

    θ_k = kΔ with ℓ(θ_k) = |logit θ_k| and prior weights ξ(θ_k). **Correction:** the paper
    takes k <= 1/Δ with ξ(θ_k) = Δ, which includes θ = 1 (ℓ = ∞) and does not normalise; here
    k = 1, ..., 1/Δ - 1 and the prior is normalised, which matches Figure 1 (Δ = 0.2 has two
    steps). ``prior="exponential"`` is Figure 1(b)'s ξ(θ) ∝ exp(-ℓ(θ)).

    Parameters
    ----------
    step : float
        Δ, with 1/Δ an integer >= 2.
    prior : {"uniform", "exponential"}
        Prior weights: uniform, or ∝ exp(-ℓ(θ)).

    Returns
    -------
    theta, lipschitz, weights : (1/Δ - 1,) ndarray
        Parameters, their ℓ(θ) in nats per changed observation, and prior weights (sum 1).

    Raises
    ------
    ValueError
        If 1/Δ is not an integer >= 2 or ``prior`` is unknown.
    """
    step = open_unit(step, "step")
    n_grid = round(1.0 / step)
    if n_grid < 2 or not math.isclose(n_grid * step, 1.0, rel_tol=1e-9):
        raise ValueError(f"1/step must be an integer >= 2, got step={step!r}")
    theta = np.arange(1, n_grid) / n_grid
    ell = np.abs(np.log(theta) - np.log1p(-theta))
    if prior == "uniform":
        weights = np.ones_like(theta)
    elif prior == "exponential":
        weights = np.exp(-ell)
    else:
        raise ValueError(f"prior must be 'uniform' or 'exponential', got {prior!r}")
    return theta, ell, weights / weights.sum()


def lipschitz_mass(
    lipschitz_values: np.ndarray | Sequence[float], weights: np.ndarray | Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The step function L ↦ ξ(Θ_L) of a finite family (Dimitrakakis et al., eq. 4; Fig. 1).

    Θ_L = {θ : ℓ(θ) <= L}; for a finite family ξ(Θ_L) jumps at each distinct value of ℓ.

    Parameters
    ----------
    lipschitz_values : (K,) array_like
        ℓ(θ_k) >= 0, finite (nats per unit of ρ).
    weights : (K,) array_like
        Prior probabilities ξ(θ_k) >= 0, summing to 1.

    Returns
    -------
    levels, mass : ndarray
        Distinct ℓ values in increasing order (values within 1e-12 relative are merged) and
        ξ(Θ_L) at each; the last mass is 1.

    Raises
    ------
    ValueError
        If the arrays differ in shape, are empty, contain non-finite or negative values, or
        the weights do not sum to 1.
    """
    ell = np.asarray(lipschitz_values, dtype=float).ravel()
    w = np.asarray(weights, dtype=float).ravel()
    if ell.size == 0 or ell.shape != w.shape:
        raise ValueError("lipschitz_values and weights must be non-empty and of equal length")
    if not (np.all(np.isfinite(ell)) and np.all(ell >= 0)):
        raise ValueError("lipschitz_values must be finite and >= 0")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and math.isclose(w.sum(), 1.0)):
        raise ValueError("weights must be >= 0 and sum to 1")
    order = np.argsort(ell, kind="stable")
    ell, w = ell[order], w[order]
    new_level = np.ones(ell.size, dtype=bool)
    new_level[1:] = ~np.isclose(ell[1:], ell[:-1], rtol=1e-12, atol=1e-12)
    group = np.cumsum(new_level) - 1
    mass = np.cumsum(np.bincount(group, weights=w))
    mass[-1] = 1.0
    return ell[new_level], mass


def stochastic_lipschitz_c(
    lipschitz_values: np.ndarray | Sequence[float],
    weights: np.ndarray | Sequence[float],
    l0: float,
) -> float:
    """Largest c with ξ(Θ_L) >= 1 - exp(-c(L - L₀)) for all L >= L₀, for a finite family.

    Dimitrakakis et al., Assumption 2 (eq. 5), for a given L₀:
    c = inf_{L > L₀} -ln(1 - ξ(Θ_L)) / (L - L₀). ξ(Θ_L) is a step function, so the infimum is
    taken at the left limits of its jumps. How the paper fits (c, L₀) jointly in Figure 1 is not
    specified; only c for a given L₀ is computed.

    Parameters
    ----------
    lipschitz_values, weights : (K,) array_like
        As for :func:`lipschitz_mass`.
    l0 : float
        L₀ >= 0.

    Returns
    -------
    float
        c >= 0 (``inf`` if ξ(Θ_{L₀}) = 1; 0 if ξ(Θ_L) = 0 just above L₀, i.e. Assumption 2
        fails at this L₀).

    Raises
    ------
    ValueError
        As for :func:`lipschitz_mass`, or if L₀ is negative.
    """
    l0 = non_negative(l0, "l0")
    levels, mass = lipschitz_mass(lipschitz_values, weights)
    # On [u_j, u_{j+1}) the mass is F_j; below u_1 it is 0. The bound for the interval ending
    # at u_{j+1} > L0 is -ln(1 - F_j) / (u_{j+1} - L0); the last interval (F = 1) is free.
    best = math.inf
    previous = 0.0
    for level, cumulative in zip(levels, mass, strict=True):
        if level > l0 and previous < 1.0:
            best = min(best, -math.log1p(-previous) / (level - l0))
        previous = cumulative
    return best


# --------------------------------------------------------------------------------------------
# Dimitrakakis et al.: Assumption 2 (stochastic Lipschitz continuity)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assumption2Constants:
    """Constants (c, L₀, C) of Dimitrakakis et al.'s Assumption 2 and eq. 9.

    ξ(Θ_L) >= 1 - exp(-c(L - L₀)) for all L >= L₀ (eq. 5), and C = sup_x sup_θ p_θ(x)/φ(x) >= 1
    is the ratio of the maximum to the marginal likelihood (eq. 9 and the proof of Theorem 7).

    Attributes
    ----------
    c : float
        c > 0 (c > 1 is needed by Theorems 7.2, 8.2, Corollary 10.2).
    l0 : float
        L₀ >= 0, in nats per unit of ρ.
    C : float
        C >= 1 (dimensionless; may be ``inf`` if it overflows).
    source : str
        The result the constants come from.
    """

    c: float
    l0: float
    C: float
    source: str = ""

    def __post_init__(self) -> None:
        positive(self.c, "c")
        non_negative(self.l0, "l0")
        if not float(self.C) >= 1.0:
            raise ValueError(f"C must be >= 1 (C >= 1 always holds), got {self.C!r}")

    def delta(self) -> float:
        """δ of Theorem 8.2: see :func:`stochastic_posterior_delta`."""
        return stochastic_posterior_delta(self.c, self.l0, self.C)


def _assumption2(c: float, l0: float, big_c: float) -> tuple[float, float, float]:
    """Validate Assumption-2 constants and require c > 1 (Theorems 7.2, 8.2)."""
    constants = Assumption2Constants(c, l0, big_c)
    if not constants.c > 1.0:
        raise ValueError(
            f"Assumption 2 results (Theorems 7.2, 8.2, Corollary 10.2) need c > 1, got c={c!r}"
        )
    return float(constants.c), float(constants.l0), float(constants.C)


def stochastic_posterior_delta(c: float, l0: float, big_c: float) -> float:
    """δ = √(½·C·(1 + 2L₀ + 1/c)) of the posterior under Assumption 2.

    Dimitrakakis et al., Theorem 8.2 (and Corollary 10.2 for one posterior sample): the
    posterior is (0, δ)-DP under the pseudo-metric √ρ, i.e.
    |ξ(B|x) - ξ(B|y)| <= δ·√ρ(x, y). **Correction:** the appendix prints "(1 + 2L₀c⁻¹)"; the
    statement's (1 + 2L₀ + c⁻¹) is implemented. Since C >= 1, δ >= √½, and it is often >= 1
    (vacuous), in which case a :class:`~pymc_dp.theory.VacuousBoundWarning` is emitted. N
    samples compose to at most N·δ (Theorem 4; not stated in the paper).

    Parameters
    ----------
    c : float
        c > 1 (Assumption 2).
    l0 : float
        L₀ >= 0 (Assumption 2), nats per unit of ρ.
    big_c : float
        C >= 1 (eq. 9).

    Returns
    -------
    float
        δ per unit of √ρ.

    Raises
    ------
    ValueError
        If c <= 1, L₀ < 0 or C < 1.

    Warns
    -----
    VacuousBoundWarning
        If δ >= 1.
    """
    c, l0, big_c = _assumption2(c, l0, big_c)
    delta = math.sqrt(0.5 * big_c * (1.0 + 2.0 * l0 + 1.0 / c))
    warn_if_vacuous(delta, "Theorem 8.2 delta")
    return delta


def random_dp_failure_probability(lipschitz: float, c: float, l0: float) -> float:
    """Probability exp(-c(L - L₀)) that the posterior fails to be (2L, 0)-DP.

    Dimitrakakis et al., Corollary 9: under Assumption 2 with c > 1 and L >= L₀, the posterior
    is (2L, 0, exp(-c(L - L₀)))-randomly DP under ρ; the randomness is over the prior measure.

    Parameters
    ----------
    lipschitz : float
        L >= L₀, nats per unit of ρ.
    c : float
        c > 1.
    l0 : float
        L₀ >= 0.

    Returns
    -------
    float
        The failure probability, in (0, 1].

    Raises
    ------
    ValueError
        If c <= 1, L₀ < 0 or L < L₀.
    """
    c, l0, _ = _assumption2(c, l0, 1.0)
    lipschitz = positive(lipschitz, "lipschitz")
    if lipschitz < l0:
        raise ValueError(f"Corollary 9 needs L >= L0, got L={lipschitz!r} < L0={l0!r}")
    return math.exp(-c * (lipschitz - l0))


def kl_robustness_bound(lipschitz: float, distance: float = 1.0) -> float:
    """KL(ξ(·|x) ‖ ξ(·|y)) <= 2Lρ(x, y) under Assumption 1.

    Dimitrakakis et al., Theorem 7.1 (eq. 7).

    Parameters
    ----------
    lipschitz : float
        L > 0, nats per unit of ρ.
    distance : float, default 1
        ρ(x, y) >= 0.

    Returns
    -------
    float
        The bound on the KL divergence between the posteriors, in nats.

    Raises
    ------
    ValueError
        If L is not finite and > 0 or ρ is negative.
    """
    return 2.0 * positive(lipschitz, "lipschitz") * non_negative(distance, "distance")


def kl_robustness_bound_stochastic(
    c: float, l0: float, big_c: float, distance: float = 1.0
) -> float:
    """KL(ξ(·|x) ‖ ξ(·|y)) <= C·(1 + 2L₀ + 1/c)·ρ(x, y) under Assumption 2 with c > 1.

    Dimitrakakis et al., Theorem 7.2 (eq. 8).

    Parameters
    ----------
    c : float
        c > 1.
    l0 : float
        L₀ >= 0.
    big_c : float
        C >= 1.
    distance : float, default 1
        ρ(x, y) >= 0.

    Returns
    -------
    float
        The bound on the KL divergence, in nats.

    Raises
    ------
    ValueError
        If c <= 1, L₀ < 0, C < 1 or ρ < 0.
    """
    c, l0, big_c = _assumption2(c, l0, big_c)
    return big_c * (1.0 + 2.0 * l0 + 1.0 / c) * non_negative(distance, "distance")


def exponential_assumption2_constants(
    rate: float, lower: float, upper: float, data_bound: float
) -> Assumption2Constants:
    """(c, L₀, C) of an Exponential(θ) likelihood with a trimmed Exp(λ) prior on [c₁, c₂].

    Dimitrakakis et al., Lemma 19: c = λ, L₀ = c₁, C = c₂ / min{c₁e^{-c₁B}, c₂e^{-c₂B}} under
    ρ(x, y) = |x - y| with 0 <= x <= B. The lemma only states λ > 0; Theorem 8.2 needs λ > 1
    (checked by :func:`stochastic_posterior_delta`, not here).

    Parameters
    ----------
    rate : float
        λ > 0, the rate of the exponential prior on θ.
    lower, upper : float
        0 < c₁ < c₂, the trimmed prior support.
    data_bound : float
        B > 0, the bound on the data.

    Returns
    -------
    Assumption2Constants

    Raises
    ------
    ValueError
        If any constant is invalid.
    """
    lam = positive(rate, "rate")
    c1, c2 = interval(lower, upper, "lower", "upper")
    b = positive(data_bound, "data_bound")
    big_c = c2 / min(c1 * math.exp(-c1 * b), c2 * math.exp(-c2 * b))
    return Assumption2Constants(lam, c1, big_c, "Dimitrakakis et al. Lemma 19")


def beta_binomial_assumption2_constants(alpha: float, n_trials: int) -> Assumption2Constants:
    """(c, L₀, C) of a Binomial(n, θ) likelihood with an untrimmed Beta(α, α) prior.

    Dimitrakakis et al., Lemma 21 (α = β > 1, ρ = Hamming distance on {0, 1}ⁿ):
    L₀ = ln n, c = 2^{1-2α}/B(α, α), C = B(α, α) / B((n+2α-1)/2, (n+2α+1)/2). c > 1 (needed by
    Theorem 8.2) only for α ≳ 4, and C grows quickly with n, so the resulting δ is usually
    vacuous (e.g. α = 5, n = 1: C = 2, δ ≈ 1.346).

    Parameters
    ----------
    alpha : float
        α = β > 1.
    n_trials : int
        n >= 1.

    Returns
    -------
    Assumption2Constants
        C is ``inf`` if it overflows a float.

    Raises
    ------
    ValueError
        If α <= 1 or n is not an integer >= 1.
    """
    alpha = positive(alpha, "alpha")
    if not alpha > 1.0:
        raise ValueError(f"Lemma 21 needs alpha > 1, got {alpha!r}")
    n = positive_int(n_trials, "n_trials")
    log_b = special.betaln(alpha, alpha)
    c = math.exp((1.0 - 2.0 * alpha) * math.log(2.0) - log_b)
    log_big_c = log_b - special.betaln((n + 2 * alpha - 1) / 2, (n + 2 * alpha + 1) / 2)
    big_c = math.exp(log_big_c) if log_big_c < 709.0 else math.inf
    return Assumption2Constants(c, math.log(n), big_c, "Dimitrakakis et al. Lemma 21")


def normal_known_mean_assumption2_constants(
    rate: float, lower: float, upper: float, mean: float
) -> Assumption2Constants:
    """(c, L₀, C) of N(μ, 1/θ), μ known, with a trimmed Exp(λ) prior on θ ∈ [c₁, c₂].

    Dimitrakakis et al., Lemma 22, under ρ(x, y) = |x² - y²| + 2|x - y|: c = 2λ/max{|μ|, 1},
    L₀ = c₁·max{|μ|, 1}/2, C = min{√(c₂/c₁)·exp(c₁c₂²/2), exp(c₂³/2)}. **Transcribed as
    printed and suspect:** an upper bound on sup-likelihood / marginal should be a max, not a
    min, and c₂ appears where the data bound B is expected; no corrected form is known, so treat
    the resulting δ with caution.

    Parameters
    ----------
    rate : float
        λ > 0.
    lower, upper : float
        0 < c₁ < c₂, the trimmed prior support of the precision θ.
    mean : float
        The known mean μ (finite).

    Returns
    -------
    Assumption2Constants

    Raises
    ------
    ValueError
        If any constant is invalid.
    """
    lam = positive(rate, "rate")
    c1, c2 = interval(lower, upper, "lower", "upper")
    mean = float(mean)
    if not math.isfinite(mean):
        raise ValueError(f"mean must be finite, got {mean!r}")
    m = max(abs(mean), 1.0)
    big_c = min(math.sqrt(c2 / c1) * math.exp(c1 * c2**2 / 2.0), math.exp(c2**3 / 2.0))
    return Assumption2Constants(2.0 * lam / m, c1 * m / 2.0, big_c, "Dimitrakakis et al. Lemma 22")


# --------------------------------------------------------------------------------------------
# Dimitrakakis et al.: distinguishability and utility
# --------------------------------------------------------------------------------------------


def distinguishability_threshold(n_samples: int, delta: float, lipschitz: float) -> float:
    """ρ threshold 3·ln(1/δ)/(4LN) of Dimitrakakis et al., Theorem 13 (Assumption 1).

    An adversary holding N posterior samples can distinguish data x, y with probability 1 - δ
    only if ρ(x, y) >= 3 ln(1/δ) / (4LN) (a necessary condition, from Lemma 12, Pinsker and
    eq. 7). Here N is the number of posterior samples, not the dataset size.

    Parameters
    ----------
    n_samples : int
        N >= 1 posterior samples.
    delta : float
        0 < δ < 1.
    lipschitz : float
        L > 0, nats per unit of ρ.

    Returns
    -------
    float
        The threshold, in units of ρ.

    Raises
    ------
    ValueError
        If N, δ or L is invalid.
    """
    n = positive_int(n_samples, "n_samples")
    delta = open_unit(delta, "delta")
    return 3.0 * math.log(1.0 / delta) / (4.0 * positive(lipschitz, "lipschitz") * n)


def distinguishability_threshold_stochastic(
    n_samples: int, delta: float, c: float, big_c: float
) -> float:
    """ρ threshold 6·ln(1/δ) / (N·(C/c + ln C)) of Dimitrakakis et al., Theorem 13 (Ass. 2).

    Implemented as stated. **Flag:** the constant (C/c + ln C) does not follow from Theorem
    7.2's KL constant C(1 + 2L₀ + 1/c); the same argument with eq. 8 would give
    3·ln(1/δ) / (2N·C·(1 + 2L₀ + 1/c)).

    Parameters
    ----------
    n_samples : int
        N >= 1 posterior samples.
    delta : float
        0 < δ < 1.
    c : float
        c > 0 (Assumption 2).
    big_c : float
        C >= 1 (eq. 9).

    Returns
    -------
    float
        The threshold, in units of ρ.

    Raises
    ------
    ValueError
        If N, δ, c or C is invalid.
    """
    n = positive_int(n_samples, "n_samples")
    delta = open_unit(delta, "delta")
    constants = Assumption2Constants(c, 0.0, big_c)
    denominator = constants.C / constants.c + math.log(constants.C)
    return 6.0 * math.log(1.0 / delta) / (n * denominator)


def psaqr_utility_gap(n_samples: int, delta: float) -> float:
    """Utility gap 2·√(ln(2/δ)/(2N)) of answering queries from N posterior samples.

    Dimitrakakis et al., Lemma 11 (explicit constant from its proof, App. A): with utilities in
    [0, 1], Algorithm 2's response is within this gap of the optimal expected utility with
    probability >= 1 - δ (Hoeffding, for a fixed query/response pair).

    Parameters
    ----------
    n_samples : int
        N >= 1 posterior samples.
    delta : float
        0 < δ < 1.

    Returns
    -------
    float
        The gap, in utility units.

    Raises
    ------
    ValueError
        If N or δ is invalid.
    """
    n = positive_int(n_samples, "n_samples")
    delta = open_unit(delta, "delta")
    return 2.0 * math.sqrt(math.log(2.0 / delta) / (2.0 * n))
