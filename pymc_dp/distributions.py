"""Truncated Beta and truncated Dirichlet priors for posterior-sampling mechanisms.

One-posterior-sample mechanisms need a parameter space bounded away from 0 (Foulds et al.
2016, §3.1 eq. 13–15; App. E.1): Beta(α, β) truncated to [a0, 1 − a0], and Dirichlet(α)
truncated to {θ : θ_j >= a0 for all j}.

* :func:`TruncatedBeta` is PyMC's own ``pm.Truncated`` of a Beta. Its logp is normalised and
  its draws are exact (inverse CDF).
* :class:`TruncatedDirichlet` is a PyMC distribution with its own random-variable op
  (:class:`TruncatedDirichletRV`), so model analysis recognises it after cloning. Its logp is
  the Dirichlet logp on the truncated simplex and −∞ outside it, up to the truncation's
  normalising constant. That constant depends only on (α, a0) and has no closed form, so the
  distribution is for priors with fixed parameters; a (α, a0) hyperprior would make the
  constant matter. Random draws are exact, by rejection from the untruncated Dirichlet
  (:func:`sample_truncated_dirichlet`). Inside Gibbs samplers the posterior is updated with
  the Fang et al. (2000) kernel (:func:`pymc_dp.truncated.truncated_dirichlet_gibbs`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.multivariate import SimplexContinuous
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.op import RandomVariable

__all__ = [
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedDirichletRV",
    "sample_truncated_dirichlet",
]

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


class TruncatedDirichletRV(RandomVariable):
    """Random-variable op of :class:`TruncatedDirichlet`: exact draws by rejection."""

    name = "truncated_dirichlet"
    signature = "(k),()->(k)"
    dtype = "floatX"
    _print_name = ("TruncatedDirichlet", "\\operatorname{TruncatedDirichlet}")

    @classmethod
    def rng_fn(cls, rng, alpha, truncation, size):
        alpha = np.asarray(alpha, dtype=np.float64)
        batch = (
            tuple(size)
            if size is not None
            else np.broadcast_shapes(alpha.shape[:-1], np.shape(truncation))
        )
        alphas = np.broadcast_to(alpha, (*batch, alpha.shape[-1])).reshape(-1, alpha.shape[-1])
        lowers = np.broadcast_to(np.asarray(truncation, np.float64), batch).reshape(-1)
        if len(alphas) and np.all(alphas == alphas[0]) and np.all(lowers == lowers[0]):
            draws = sample_truncated_dirichlet(alphas[0], float(lowers[0]), rng, (len(alphas),))
        else:
            rows = zip(alphas, lowers, strict=True)
            draws = np.array([sample_truncated_dirichlet(a, float(lo), rng) for a, lo in rows])
        return draws.reshape(*batch, alpha.shape[-1])


truncated_dirichlet = TruncatedDirichletRV()


class TruncatedDirichlet(SimplexContinuous):
    """Dirichlet(α) truncated to {θ_j >= a0}, as a PyMC variable (simplex-valued).

    ``TruncatedDirichlet(name, alpha, truncation, **kwargs)``: ``alpha`` has shape (..., K)
    (concentrations > 0, **fixed**), ``truncation`` is a0 in (0, 1/K). Other keyword arguments
    (``dims``, ``shape`` with K last, ...) are those of any PyMC distribution.

    The logp is the Dirichlet logp inside the truncated simplex and −∞ outside; it omits the
    truncation's normalising constant, which depends only on (α, a0) and has no closed form. A
    prior on α would need that constant, so :func:`pymc_dp.sample` refuses a TruncatedDirichlet
    whose α is not constant. Random draws are exact (:func:`sample_truncated_dirichlet`).

    Raises
    ------
    ValueError
        If α is not positive or a0 is not in (0, 1/K) (checked when they are constants).
    """

    rv_op = truncated_dirichlet

    @classmethod
    def dist(cls, alpha, truncation, **kwargs):
        if not isinstance(alpha, pt.TensorVariable):
            alpha = np.asarray(alpha, dtype=np.float64)
            if np.any(~(alpha > 0)):
                raise ValueError("alpha must be > 0")
            if not isinstance(truncation, pt.TensorVariable):
                k = alpha.shape[-1]
                if not np.all((0 < np.asarray(truncation)) & (np.asarray(truncation) < 1 / k)):
                    raise ValueError(f"truncation a0 must lie in (0, 1/{k}), got {truncation!r}")
        return super().dist([pt.as_tensor_variable(alpha), pt.as_tensor(truncation)], **kwargs)

    def support_point(rv, size, alpha, truncation):
        """The Dirichlet mean pulled into the truncated simplex: a0 + (1 − K·a0)·α/Σα."""
        k = alpha.shape[-1]
        point = truncation[..., None] + (1 - k * truncation[..., None]) * alpha / alpha.sum(
            axis=-1, keepdims=True
        )
        if not rv_size_is_none(size):
            point = pt.full(pt.concatenate([size, [k]]), point)
        return point

    def logp(value, alpha, truncation):
        inside = pt.all(value >= truncation[..., None], axis=-1)
        log_norm = pt.gammaln(alpha.sum(-1)) - pt.gammaln(alpha).sum(-1)
        logp = log_norm + ((alpha - 1) * pt.log(value)).sum(-1)
        return check_parameters(
            pt.switch(inside, logp, -np.inf),
            pt.all(alpha > 0),
            pt.all(truncation > 0),
            pt.all(truncation * alpha.shape[-1] < 1),
            msg="alpha > 0, 0 < truncation < 1/K",
        )
