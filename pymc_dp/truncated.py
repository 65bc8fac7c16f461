"""Truncated Beta draws and a Gibbs kernel for lower-truncated Dirichlet distributions.

One-posterior-sample (OPS) mechanisms need a bounded log-likelihood, hence a parameter space
bounded away from 0: a Dirichlet truncated to {θ : θ_j >= a0 for all j} (Foulds et al. 2016,
§3.1 eq. 13–15, and App. E.1, where a0 = 1/(M·K_d)). Its normalising constant has no closed
form, so Foulds et al. sample it inside Gibbs with Fang, Geng & Tian (2000): each component is
updated from a truncated Beta conditional. :func:`truncated_dirichlet_gibbs` implements that
update: for j = 1..K-1 the pair (θ_j, θ_K) with fixed sum s is redrawn as
θ_j = s·u, θ_K = s·(1 - u), u ~ Beta(α_j, α_K) truncated to [a0/s, 1 - a0/s]. Each pair update
is an exact conditional draw, so the kernel leaves the truncated Dirichlet invariant; it is an
MCMC kernel, not an independent draw.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["truncated_beta", "truncated_dirichlet_gibbs"]

_MIN_MASS = 1e-12  # below this the inverse-CDF draw loses all precision


def truncated_beta(
    a: np.ndarray,
    b: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw from Beta(a, b) truncated to [lower, upper], elementwise (broadcast shapes).

    Inverse-CDF sampling with SciPy's regularised incomplete beta function and its inverse.
    Draws are made in whichever orientation (x or 1 - x) puts the interval in the lower half
    of the CDF, where the CDF has full relative precision. When the interval carries less
    than 1e-12 of the Beta mass (it sits deep in a tail, where the density is monotone and
    log-linear on the interval) the draw uses the exponential tail approximation at the end
    nearest the mode.

    Raises
    ------
    ValueError
        If a or b is not > 0 or the interval is not inside [0, 1] with lower < upper.
    """
    a, b, lower, upper = np.broadcast_arrays(
        *(np.asarray(v, np.float64) for v in (a, b, lower, upper))
    )
    if np.any(~(a > 0)) or np.any(~(b > 0)):
        raise ValueError("Beta parameters must be > 0")
    if np.any(~((0 <= lower) & (lower < upper) & (upper <= 1))):
        raise ValueError("need 0 <= lower < upper <= 1")
    flip = special.betainc(a, b, lower) > 0.5
    a_, b_ = np.where(flip, b, a), np.where(flip, a, b)
    lo, hi = np.where(flip, 1 - upper, lower), np.where(flip, 1 - lower, upper)
    cdf_lo, cdf_hi = special.betainc(a_, b_, lo), special.betainc(a_, b_, hi)
    u = rng.uniform(size=a.shape)
    x = special.betaincinv(a_, b_, cdf_lo + u * (cdf_hi - cdf_lo))
    tail = ~(cdf_hi - cdf_lo > _MIN_MASS * np.maximum(cdf_hi, 1e-300))
    if np.any(tail):
        x[tail] = _tail_draw(a_[tail], b_[tail], lo[tail], hi[tail], u[tail])
    x = np.clip(x, lo, hi)
    return np.where(flip, 1 - x, x)


def _tail_draw(a, b, lo, hi, u):
    """Truncated-exponential draw near the end of [lo, hi] with the larger Beta density."""
    mode_high = (a - 1) * (1 - hi) > (b - 1) * hi  # log-density increasing at hi
    end = np.where(mode_high, hi, lo)
    slope = np.abs((a - 1) / end - (b - 1) / (1 - end))
    width = hi - lo
    rate = np.maximum(slope, 1e-300)
    # inverse CDF of an exponential with this rate truncated to [0, width]
    offset = -np.log1p(-u * -np.expm1(-rate * width)) / rate
    offset = np.where(slope * width < 1e-12, u * width, offset)
    return np.where(mode_high, hi - offset, lo + offset)


def truncated_dirichlet_gibbs(
    theta: np.ndarray,
    alpha: np.ndarray,
    lower: float,
    rng: np.random.Generator,
    *,
    sweeps: int = 1,
) -> np.ndarray:
    """One or more Fang et al. (2000) Gibbs sweeps for Dirichlet(alpha) truncated at ``lower``.

    Parameters
    ----------
    theta : ndarray, shape (..., K)
        Current point; every row must lie in the truncated simplex (θ_j >= lower, sum 1).
    alpha : ndarray, shape (..., K)
        Dirichlet parameters (> 0), one row per row of ``theta``.
    lower : float
        The truncation a0, with 0 < a0 < 1/K.
    rng : numpy.random.Generator
    sweeps : int
        Number of sweeps over the K - 1 pair updates.

    Returns
    -------
    ndarray, shape (..., K)
        The new point (a new array), again in the truncated simplex.

    Raises
    ------
    ValueError
        If ``lower`` is not in (0, 1/K) or ``theta`` is outside the truncated simplex.
    """
    theta = np.array(theta, dtype=np.float64)
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), theta.shape)
    n_categories = theta.shape[-1]
    if not 0 < lower < 1 / n_categories:
        raise ValueError(
            f"truncation must lie in (0, 1/K) = (0, {1 / n_categories:g}), got {lower}"
        )
    if np.any(theta < lower * (1 - 1e-9)) or not np.allclose(theta.sum(-1), 1.0):
        raise ValueError("theta must lie in the truncated simplex")
    theta = np.maximum(theta, lower)
    theta /= theta.sum(-1, keepdims=True)
    last = n_categories - 1
    for _ in range(sweeps):
        for j in range(last):
            total = theta[..., j] + theta[..., last]
            bound = np.minimum(lower / total, 0.5 - 1e-12)
            u = truncated_beta(alpha[..., j], alpha[..., last], bound, 1 - bound, rng)
            theta[..., j] = total * u
            theta[..., last] = total - theta[..., j]
    return theta
