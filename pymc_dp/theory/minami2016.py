"""Minami, Arai, Sato & Nakagawa (NeurIPS 2016): differential privacy without sensitivity.

"Differential Privacy without Sensitivity" (cited as *Minami et al.*). The Gibbs posterior
G_β ∝ exp(−β Σ_i ℓ(θ, x_i))·π(θ) with a non-negative, convex, L-Lipschitz loss and an
m_π-strongly log-concave prior on Θ = ℝ^d (Assumption 6). This module holds closed-form
calculators for:

* the tail bound of Theorem 7 (eq. 6), its exact inversion for the largest inverse temperature
  β (a correction of Corollary 8, which is also offered and flagged), the forward map ε(β),
  and the range of ε on which Corollary 8 is valid;
* the constants of §3.3's logistic regression: the Lipschitz constant of the logistic loss
  (corrected for the intercept) and the strong convexity m_π of a Gaussian prior;
* the δ of an approximate sampler within total variation γ (Proposition 12, corrected).

The calibration itself (the exact β* used by the mechanism
:func:`pymc_dp.tempering.logistic_regression_gibbs_posterior`) lives with the mechanisms,
:func:`pymc_dp.mechanisms.exponential.gibbs_posterior_inverse_temperature`; :func:`minami_beta`
delegates to it. Where a printed formula is wrong the corrected form is implemented and the
docstring says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from pymc_dp.ledger import validate_delta, validate_epsilon
from pymc_dp.mechanisms.exponential import gibbs_posterior_inverse_temperature
from pymc_dp.theory._checks import non_negative, open_unit, positive, warn_if_vacuous

__all__ = [
    "approximate_sampling_delta",
    "gaussian_prior_strong_convexity",
    "logistic_regression_lipschitz",
    "minami_beta",
    "minami_corollary8_epsilon_max",
    "minami_epsilon",
    "minami_tail_bound",
]


def _minami_checks(delta: float, lipschitz: float, strong_convexity: float) -> tuple[float, ...]:
    return (
        open_unit(delta, "delta"),
        positive(lipschitz, "lipschitz"),
        positive(strong_convexity, "strong_convexity"),
    )


def _minami_beta_in_unit(beta: float) -> float:
    value = float(beta)
    if not math.isfinite(value) or not 0.0 < value <= 1.0:
        raise ValueError(f"beta must satisfy 0 < beta <= 1 (Minami Theorem 7), got {beta!r}")
    return value


def minami_tail_bound(
    epsilon: float, beta: float, lipschitz: float, strong_convexity: float
) -> float:
    """Right-hand side of Minami et al., Theorem 7, eq. 6.

    G_{β,D}{log(dG_{β,D}/dG_{β,D'}) >= ε} <= exp(-(m_π/(8L²β²))·(ε - 2L²β²/m_π)²) for
    ε > 2L²β²/m_π (Assumption 6: loss non-negative, L-Lipschitz and convex on Θ = ℝ^d; prior
    m_π-strongly log-concave). For ε <= 2L²β²/m_π the theorem says nothing and 1 is returned.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    beta : float
        Inverse temperature, 0 < β <= 1.
    lipschitz : float
        L > 0, the Lipschitz constant of θ ↦ ℓ(θ, x) (per record, global over θ).
    strong_convexity : float
        m_π > 0, the strong-convexity constant of -log π (1/σ² for an N(0, σ²I) prior).

    Returns
    -------
    float
        The tail bound, in (0, 1]; (ε, δ)-DP holds with δ equal to it (Theorem 5).

    Raises
    ------
    ValueError
        If any argument is invalid.
    """
    epsilon = validate_epsilon(epsilon)
    beta = _minami_beta_in_unit(beta)
    lipschitz = positive(lipschitz, "lipschitz")
    m = positive(strong_convexity, "strong_convexity")
    a = 2.0 * lipschitz**2 * beta**2 / m
    if epsilon <= a:
        return 1.0
    return math.exp(-((epsilon - a) ** 2) / (4.0 * a))


def minami_corollary8_epsilon_max(delta: float) -> float:
    """Largest ε for which Minami et al.'s Corollary 8 is implied by Theorem 7.

    Corollary 8's β gives a = 2L²β²/m_π = ε²/(2(1 + 2 log(1/δ))), which satisfies eq. 6 iff
    ε <= 2(1 + 2c)(1 - √(2c/(1 + 2c))) with c = log(1/δ) (derived in the digest; ≈ 1.0258 at
    δ = 1e-2, 1.0067 at δ = 1e-8; always > 1).

    Parameters
    ----------
    delta : float
        0 < δ < 1.

    Returns
    -------
    float
        ε_max(δ).

    Raises
    ------
    ValueError
        If δ is not in (0, 1).
    """
    c = math.log(1.0 / open_unit(delta, "delta"))
    return 2.0 * (1.0 + 2.0 * c) * (1.0 - math.sqrt(2.0 * c / (1.0 + 2.0 * c)))


def minami_beta(
    epsilon: float,
    delta: float,
    lipschitz: float,
    strong_convexity: float,
    method: Literal["exact", "corollary8"] = "exact",
) -> float:
    """Largest inverse temperature β for which the Gibbs posterior is (ε, δ)-DP, capped at 1.

    ``method="exact"`` (default, a **correction** of the paper): the exact inversion of Minami
    et al., Theorem 7, eq. 6. With a = 2L²β²/m_π and c = log(1/δ), eq. 6 <= δ with ε > a iff
    a <= (√(ε + c) - √c)², so

        β* = (√(m_π/2)/L)·(√(ε + c) - √c) = (√(m_π/2)/L)·ε / (√(ε + c) + √c),

    computed in the second, cancellation-free form (the calibration of pymc_dp's Gibbs
    posterior, :func:`pymc_dp.mechanisms.exponential.gibbs_posterior_inverse_temperature`).
    ``method="corollary8"``: the paper's closed form β = (ε/(2L))·√(m_π/(1 + 2 log(1/δ)))
    (Corollary 8, eq. 7), which follows from Theorem 7 only for ε <= ε_max(δ) ≈ 1
    (:func:`minami_corollary8_epsilon_max`); above it the value is too large (not (ε, δ)-DP)
    and a warning is emitted. Either result is capped at 1 because Theorem 7 assumes
    β ∈ (0, 1]. The guarantee is for *one* draw from the Gibbs posterior
    G_β ∝ exp(-β Σ ℓ(θ, x_i)) π(θ) on Θ = ℝ^d, with replace-one neighbours.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        0 < δ < 1.
    lipschitz : float
        L > 0, Lipschitz constant of θ ↦ ℓ(θ, x) for every x (e.g.
        :func:`logistic_regression_lipschitz`).
    strong_convexity : float
        m_π > 0, strong-convexity constant of -log π (e.g.
        :func:`gaussian_prior_strong_convexity`).
    method : {"exact", "corollary8"}
        Exact inversion of eq. 6, or the paper's Corollary 8.

    Returns
    -------
    float
        β in (0, 1].

    Raises
    ------
    ValueError
        If an argument is invalid or ``method`` is unknown.

    Warns
    -----
    UserWarning
        With ``method="corollary8"``, if the returned β exceeds the exact β* (ε > ε_max(δ)).
    """
    epsilon = validate_epsilon(epsilon)
    delta, lipschitz, m = _minami_checks(delta, lipschitz, strong_convexity)
    c = math.log(1.0 / delta)
    exact = gibbs_posterior_inverse_temperature(epsilon, delta, lipschitz, m)
    if method == "exact":
        return exact
    if method != "corollary8":
        raise ValueError(f"method must be 'exact' or 'corollary8', got {method!r}")
    corollary = min(1.0, epsilon / (2.0 * lipschitz) * math.sqrt(m / (1.0 + 2.0 * c)))
    if corollary > exact * (1.0 + 1e-12):
        warnings.warn(
            f"Corollary 8 of Minami et al. is invalid at epsilon={epsilon:g} > "
            f"{minami_corollary8_epsilon_max(delta):.4f}: beta={corollary:.6g} exceeds the exact "
            f"bound {exact:.6g} and is not ({epsilon:g}, {delta:g})-DP; use method='exact'",
            UserWarning,
            stacklevel=2,
        )
    return corollary


def minami_epsilon(beta: float, delta: float, lipschitz: float, strong_convexity: float) -> float:
    """ε of the Gibbs posterior at inverse temperature β (the forward map of eq. 6).

    Minami et al., Theorem 7, solved for ε (derived in the digest): with a = 2L²β²/m_π and
    c = log(1/δ), eq. 6 equals δ at ε = a + 2√(a·c). Inverse of :func:`minami_beta` for β < 1.

    Parameters
    ----------
    beta : float
        0 < β <= 1.
    delta : float
        0 < δ < 1.
    lipschitz : float
        L > 0.
    strong_convexity : float
        m_π > 0.

    Returns
    -------
    float
        ε > 0 such that one draw from G_β is (ε, δ)-DP.

    Raises
    ------
    ValueError
        If any argument is invalid.
    """
    beta = _minami_beta_in_unit(beta)
    delta, lipschitz, m = _minami_checks(delta, lipschitz, strong_convexity)
    a = 2.0 * lipschitz**2 * beta**2 / m
    return a + 2.0 * math.sqrt(a * math.log(1.0 / delta))


def logistic_regression_lipschitz(feature_norm_bound: float, intercept: bool = True) -> float:
    """Lipschitz constant of the logistic loss log(1 + exp(-y(aᵀz + b))) in θ = (a, b).

    Minami et al., §3.3 claims ℓ_LR is r-Lipschitz for ‖z‖₂ <= r. **Correction:** with an
    intercept b, ∇_{(a,b)} ℓ = -yσ(-y(aᵀz + b))·(z, 1), whose norm is bounded by √(r² + 1); r is
    right only without an intercept. The bound r must be data-independent (clip features to it).

    Parameters
    ----------
    feature_norm_bound : float
        r > 0, the bound on ‖z‖₂.
    intercept : bool, default True
        Whether θ includes the intercept b.

    Returns
    -------
    float
        L = √(r² + 1) with an intercept, r without.

    Raises
    ------
    ValueError
        If r is not finite and > 0.
    """
    r = positive(feature_norm_bound, "feature_norm_bound")
    return math.hypot(r, 1.0) if intercept else r


def gaussian_prior_strong_convexity(
    sigma: float | None = None, covariance: np.ndarray | Sequence[Sequence[float]] | None = None
) -> float:
    """Strong-convexity constant m_π of -log π for a Gaussian prior.

    Minami et al., Assumption 6(iii): m_π = 1/σ² for N(μ, σ²I), and λ_min(Σ⁻¹) = 1/λ_max(Σ)
    for N(μ, Σ) (in §3.3, m_π = nλ for the prior N(0, (nλ)⁻¹I)).

    Parameters
    ----------
    sigma : float, optional
        σ > 0, the prior standard deviation of each coordinate.
    covariance : (d, d) array_like, optional
        Symmetric positive-definite prior covariance Σ. Give exactly one of the two.

    Returns
    -------
    float
        m_π > 0.

    Raises
    ------
    ValueError
        Unless exactly one argument is given and it is valid.
    """
    if (sigma is None) == (covariance is None):
        raise ValueError("give exactly one of sigma and covariance")
    if sigma is not None:
        return 1.0 / positive(sigma, "sigma") ** 2
    cov = np.asarray(covariance, dtype=float)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.shape[0] == 0:
        raise ValueError(f"covariance must be a non-empty square matrix, got shape {cov.shape}")
    if not np.all(np.isfinite(cov)) or not np.allclose(cov, cov.T):
        raise ValueError("covariance must be a finite symmetric matrix")
    eigenvalues = np.linalg.eigvalsh(cov)
    if eigenvalues.min() <= 0:
        raise ValueError("covariance must be positive definite")
    return 1.0 / float(eigenvalues.max())


def approximate_sampling_delta(epsilon: float, delta: float, tv_distance: float) -> float:
    """δ' = δ + (1 + e^ε)·γ of an approximate sampler within total variation γ.

    Minami et al., Proposition 12: if D ↦ ρ_D is (ε, δ)-DP and each ρ'_D satisfies
    d_TV(ρ_D, ρ'_D) <= γ, then D ↦ ρ'_D is (ε, δ + (1 + e^ε)γ)-DP. **Correction:** the
    extracted text reads "(εδ + (1 + eε)γ)"; Proposition 13 confirms the form implemented.
    The sampler must *certify* γ (e.g. Langevin Monte Carlo with the schedule of Proposition
    13); an MCMC run without such a certificate has no δ.

    Parameters
    ----------
    epsilon : float
        ε > 0 of the exact mechanism.
    delta : float
        0 <= δ < 1 of the exact mechanism.
    tv_distance : float
        0 <= γ <= 1, total-variation distance of the sampler from the exact distribution.

    Returns
    -------
    float
        δ' (a :class:`~pymc_dp.theory.VacuousBoundWarning` is emitted if δ' >= 1).

    Raises
    ------
    ValueError
        If an argument is out of range.
    """
    epsilon = validate_epsilon(epsilon)
    delta = validate_delta(delta)
    gamma = non_negative(tv_distance, "tv_distance")
    if gamma > 1.0:
        raise ValueError(f"tv_distance must be <= 1, got {tv_distance!r}")
    growth = 1.0 + math.exp(epsilon) if epsilon < 700.0 else math.inf
    total = delta + growth * gamma if gamma > 0 else delta
    warn_if_vacuous(total, "approximate-sampling delta")
    return total
