"""Truncated Beta and truncated Dirichlet priors for posterior-sampling mechanisms.

One-posterior-sample mechanisms need a parameter space bounded away from 0 (Foulds et al.
2016, §3.1 eq. 13–15; App. E.1): Beta(α, β) truncated to [a0, 1 − a0], and Dirichlet(α)
truncated to {θ : θ_j >= a0 for all j}.

* :func:`TruncatedBeta` is PyMC's own ``pm.Truncated`` of a Beta. Its logp is normalised and
  its draws are exact (inverse CDF).
* :func:`TruncatedDirichlet` is a ``pm.CustomDist``. Its logp is the Dirichlet logp on the
  truncated simplex and −∞ outside it, up to the truncation's normalising constant. That
  constant depends only on (α, a0) and has no closed form, so the distribution is for priors
  with fixed parameters; a (α, a0) hyperprior would make the constant matter. Random draws
  are exact, by rejection from the untruncated Dirichlet
  (:func:`sample_truncated_dirichlet`). Inside Gibbs samplers the posterior is updated with
  the Fang et al. (2000) kernel (:func:`pymc_dp.truncated.truncated_dirichlet_gibbs`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["TruncatedBeta", "TruncatedDirichlet", "sample_truncated_dirichlet"]

MAX_REJECTION_ROUNDS = 10_000


def TruncatedBeta(name: str, alpha: float, beta: float, truncation: float, **kwargs):
    """Beta(α, β) truncated to [a0, 1 − a0], as a PyMC variable (``pm.Truncated``).

    Raises
    ------
    ValueError
        If a0 is not in (0, 1/2).
    """
    if not 0 < truncation < 0.5:
        raise ValueError(f"truncation a0 must lie in (0, 1/2), got {truncation!r}")
    return pm.Truncated(
        name, pm.Beta.dist(alpha, beta), lower=truncation, upper=1 - truncation, **kwargs
    )


def sample_truncated_dirichlet(
    alpha: np.ndarray, truncation: float, rng: np.random.Generator, size: tuple[int, ...] = ()
) -> np.ndarray:
    """Exact draws from Dirichlet(α) restricted to {θ_j >= a0}, by rejection.

    A Dirichlet draw is accepted when every component is at least a0. For a0 = 1/(M·K) and
    α = 1 the acceptance rate is (1 − 1/M)^{K−1}.

    Raises
    ------
    RuntimeError
        If fewer than the requested draws are accepted within 10 000 rounds: the truncation
        removes almost all of the Dirichlet's mass, so use the Gibbs kernel instead.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    n_draws = int(np.prod(size, dtype=np.int64)) if size else 1
    accepted: list[np.ndarray] = []
    count = 0
    for _ in range(MAX_REJECTION_ROUNDS):
        batch = rng.dirichlet(alpha, size=max(2 * (n_draws - count), 16))
        keep = batch[np.all(batch >= truncation, axis=1)]
        accepted.append(keep)
        count += len(keep)
        if count >= n_draws:
            draws = np.concatenate(accepted)[:n_draws]
            return draws.reshape(*size, alpha.size) if size else draws[0]
    raise RuntimeError(
        f"truncated Dirichlet: acceptance too low for a0 = {truncation} and alpha = {alpha}"
    )


def _dirichlet_random(alpha, truncation, rng=None, size=None):
    alpha = np.asarray(alpha)
    batch = tuple(size) if size is not None else alpha.shape[:-1]
    core = alpha.reshape(-1, alpha.shape[-1])[0]
    return sample_truncated_dirichlet(core, float(np.asarray(truncation)), rng, batch)


def _dirichlet_logp(value, alpha, truncation):
    inside = pt.all(value >= truncation, axis=-1)
    log_norm = pt.gammaln(alpha.sum(-1)) - pt.gammaln(alpha).sum(-1)
    logp = log_norm + ((alpha - 1) * pt.log(value)).sum(-1)
    return pt.switch(inside, logp, -np.inf)


def TruncatedDirichlet(name: str, alpha, truncation: float, **kwargs):
    """Dirichlet(α) truncated to {θ_j >= a0}, as a PyMC variable (simplex-valued).

    Parameters
    ----------
    name : str
    alpha : array, shape (K,)
        Concentration (> 0), fixed.
    truncation : float
        a0 in (0, 1/K).
    **kwargs
        Passed to ``pm.CustomDist`` (e.g. ``dims``, ``shape`` with K last).

    Raises
    ------
    ValueError
        If a0 is not in (0, 1/K) or α is not positive.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    n_categories = alpha.shape[-1]
    if not 0 < truncation < 1 / n_categories:
        raise ValueError(f"truncation a0 must lie in (0, 1/{n_categories}), got {truncation!r}")
    if np.any(alpha <= 0):
        raise ValueError("alpha must be > 0")
    return pm.CustomDist(
        name,
        alpha,
        truncation,
        logp=_dirichlet_logp,
        random=_dirichlet_random,
        signature="(k),()->(k)",
        transform=pm.distributions.transforms.simplex,
        initval=np.full(alpha.shape, 1.0 / n_categories),
        **kwargs,
    )
