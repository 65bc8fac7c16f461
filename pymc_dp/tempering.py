"""Tempered PyMC models, and the Gibbs-posterior logistic regression of Minami et al.

* :func:`temper` raises a model's density to the power 1/T. With ``part="joint"`` it tempers
  prior and likelihood, Pr(θ, X)^{1/T} (Foulds et al. 2016, eq. 10 and 14); with
  ``part="likelihood"`` it tempers the likelihood only, π(θ)·Pr(X | θ)^{1/T}. The latter is
  the Gibbs posterior of Minami et al. (2016), with inverse temperature β = 1/T. Any PyMC
  sampler can then sample the tempered model. Privacy comes from the temperature *and* from
  how draws are released: only exact draws carry the guarantee.
* :func:`logistic_regression_gibbs_posterior` builds Minami et al.'s ℓ2-regularised logistic
  regression (§3.3). It uses a Gaussian prior N(0, σ²I), so m_π = 1/σ². The features are
  clipped to a data-independent norm r, so the loss is √(r² + 1)-Lipschitz with an intercept
  (:func:`pymc_dp.theory.minami2016.logistic_regression_lipschitz` has the correction). β =
  β*(ε, δ) comes from the exact inversion of their eq. 6
  (:func:`pymc_dp.mechanisms.exponential.gibbs_posterior_inverse_temperature`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.model.fgraph import clone_model, fgraph_from_model, model_from_fgraph, model_potential

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.ledger import PrivacyEvent, validate_delta, validate_epsilon
from pymc_dp.mechanisms.exponential import gibbs_posterior_inverse_temperature

__all__ = [
    "GibbsPosterior",
    "clip_feature_norms",
    "clip_log_likelihood",
    "logistic_regression_gibbs_posterior",
    "temper",
]

MINAMI_SOURCE = (
    "Minami et al. 2016, Theorem 7 / eq. (6) inverted exactly, §3.3 logistic regression with "
    "intercept (L = √(r² + 1)), Gaussian prior m_π = 1/σ²"
)


def temper(model: pm.Model, temperature: float, *, part: str = "likelihood") -> pm.Model:
    """A copy of ``model`` whose density is raised to the power 1/T.

    Adds the potential ``tempering`` = (1/T − 1) × (log-density of the tempered terms)
    without Jacobians, so the transformed variables still get their Jacobian once.

    Parameters
    ----------
    model : pm.Model
    temperature : float
        T >= 1 (T < 1 would sharpen the posterior; it is refused).
    part : {"likelihood", "joint"}
        Temper the observed variables only, or all observed and free variables. Potentials
        already in the model are not tempered.

    Raises
    ------
    ValueError
        If T < 1 or ``part`` is unknown.
    """
    if not np.isfinite(temperature) or temperature < 1:
        raise ValueError(f"temperature must be a finite number >= 1, got {temperature!r}")
    if part not in ("likelihood", "joint"):
        raise ValueError(f"part must be 'likelihood' or 'joint', got {part!r}")
    tempered = clone_model(model)
    rvs = list(tempered.observed_RVs)
    if part == "joint":
        rvs += list(tempered.free_RVs)
    with tempered:
        if rvs and temperature != 1:
            log_density = tempered.logp(vars=rvs, jacobian=False, sum=True)
            pm.Potential("tempering", (1.0 / temperature - 1.0) * log_density)
    return tempered


def clip_feature_norms(features: np.ndarray, bound: float) -> np.ndarray:
    """Scale each row z to z·min(1, r/‖z‖₂), so that every ‖z‖₂ <= r (data-independent r).

    Raises
    ------
    InvalidPrivateDataError
        If the features contain NaN or infinities.
    ValueError
        If r <= 0.
    """
    features = np.asarray(features, dtype=np.float64)
    if not np.all(np.isfinite(features)):
        raise InvalidPrivateDataError("features contain NaN or infinite values")
    if not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"the feature-norm bound must be finite and > 0, got {bound!r}")
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


@dataclass(frozen=True)
class GibbsPosterior:
    """A Gibbs-posterior model with the ledger event its exact draws would cost."""

    model: pm.Model
    beta: float
    event: PrivacyEvent


def logistic_regression_gibbs_posterior(
    features: np.ndarray,
    labels: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    prior_sigma: float,
    feature_norm_bound: float,
) -> GibbsPosterior:
    """Minami et al.'s (ε, δ)-DP Gibbs posterior for logistic regression with intercept.

    Density ∝ exp(−β Σ_i log(1 + exp(−y_i(aᵀz_i + b)))) · N(a, b | 0, σ²I), where the features
    z_i are clipped to ‖z_i‖ <= r, the labels y_i ∈ {−1, +1}, and β = min(1, β*(ε, δ; L, m_π))
    with L = √(r² + 1) and m_π = 1/σ².

    Guarantee: **one exact draw** is (ε, δ)-DP under replace-one neighbours (Minami et al.,
    Theorem 7). MCMC draws are only approximate. A sampler within total variation γ of the
    target gives (ε, δ + (1 + e^ε)γ) (Proposition 12,
    :func:`pymc_dp.theory.minami2016.approximate_sampling_delta`), and NUTS certifies no γ.
    The returned event is therefore flagged ``assumes_convergence``. It is not charged: charge
    it to a ledger when a draw is released.

    Parameters
    ----------
    features : ndarray, shape (N, P)
    labels : ndarray, shape (N,)
        0/1 or −1/+1.
    epsilon, delta : float
        The target guarantee, ε > 0 and 0 < δ < 1.
    prior_sigma : float
        σ of the Gaussian prior on every coefficient and the intercept.
    feature_norm_bound : float
        r, chosen without looking at the data.

    Returns
    -------
    GibbsPosterior
        ``model`` has variables ``coefficients`` (dim ``feature``) and ``intercept`` and the
        potential ``gibbs_loss``. The (clipped) features are a graph constant, never observed
        data, so no trace copies them.

    Raises
    ------
    InvalidPrivateDataError
        If labels are not binary or the features contain NaN or infinities.
    ValueError
        For invalid ε, δ, σ or r.
    """
    validate_epsilon(epsilon)
    if not 0 < validate_delta(delta) < 1:
        raise ValueError("the Gibbs posterior of Minami et al. needs 0 < δ < 1")
    labels = np.asarray(labels, dtype=np.float64).ravel()
    if not np.all(np.isin(labels, (-1.0, 0.0, 1.0))) or (
        np.any(labels == 0) and np.any(labels == -1)
    ):
        raise InvalidPrivateDataError("labels must be 0/1 or −1/+1 (no NaN)")
    signs = np.where(labels == 0, -1.0, labels)
    clipped = clip_feature_norms(features, feature_norm_bound)
    if clipped.shape[0] != signs.size:
        raise ValueError("features and labels must describe the same records")
    prior_sigma = float(prior_sigma)
    if not (math.isfinite(prior_sigma) and prior_sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {prior_sigma!r}")
    # The logistic loss with an intercept is √(r² + 1)-Lipschitz in (a, b) for ‖z‖ <= r
    # (Minami et al. §3.3 print r, right only without an intercept); N(0, σ²I) is
    # (1/σ²)-strongly log-concave (Assumption 6(iii)).
    lipschitz = math.hypot(float(feature_norm_bound), 1.0)
    strong_convexity = 1.0 / prior_sigma**2
    beta = gibbs_posterior_inverse_temperature(epsilon, delta, lipschitz, strong_convexity)
    with pm.Model(coords={"feature": np.arange(clipped.shape[1])}) as model:
        coefficients = pm.Normal("coefficients", 0.0, prior_sigma, dims="feature")
        intercept = pm.Normal("intercept", 0.0, prior_sigma)
        margin = pt.as_tensor(signs) * (pt.as_tensor(clipped) @ coefficients + intercept)
        pm.Potential("gibbs_loss", -beta * pt.softplus(-margin).sum())
    event = PrivacyEvent(
        mechanism="gibbs_posterior",
        epsilon=float(epsilon),
        delta=float(delta),
        sensitivity=lipschitz,
        neighbouring="replace-one",
        variables=("coefficients", "intercept"),
        noise_backend="numpy",
        statistic=f"one draw of the logistic-regression Gibbs posterior at β = {beta:.4g}",
        source=MINAMI_SOURCE,
        temperature=1.0 / beta,
        assumes_convergence=True,
    )
    return GibbsPosterior(model, beta, event)


def clip_log_likelihood(model: pm.Model, bound: float) -> pm.Model:
    """A copy of ``model`` whose per-record log-likelihoods are clipped to [−B, B].

    Each observed variable is replaced by the potential ``<name>_clipped`` =
    Σ_i clip(log p(x_i | θ), −B, B). A per-record loss bounded by B changes by at most Δ = 2B
    when a record is replaced, so sampling the clipped posterior at T = 2Δ/ε = 4B/ε is ε-DP
    (Wang et al. 2015, as quoted by Foulds et al. 2016, Theorem 3 and Minami et al. 2016,
    Theorem 4). Clipping changes the model: records with log-likelihood below −B lose
    influence. This is the price of a bound that holds without truncating the parameters.

    Raises
    ------
    ValueError
        If B is not finite and > 0, or the model has no observed variable.
    """
    bound = float(bound)
    if not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"the log-likelihood bound B must be finite and > 0, got {bound!r}")
    if not model.observed_RVs:
        raise ValueError("the model has no observed variables to clip")
    fgraph, memo = fgraph_from_model(model)
    for rv in model.observed_RVs:
        observed = memo[rv]
        rv_node, value = observed.owner.inputs[:2]
        per_record = pm.logp(rv_node, value)
        clipped = pt.clip(per_record, -bound, bound).sum()
        fgraph.remove_output(fgraph.outputs.index(observed))
        fgraph.add_output(model_potential(clipped, f"{rv.name}_clipped"))
    return model_from_fgraph(fgraph, mutate_fgraph=True)
