"""Truncated Beta, Gamma and Normal draws, and a Gibbs kernel for lower-truncated Dirichlets.

The tempered conditionals of posterior-sampling mechanisms (Foulds et al. 2016, §3.1 eq. 14;
§4.1 eq. 19) are truncated conjugate distributions: Beta for a probability, Gamma for a
Poisson rate, Normal for a mean. :func:`truncated_beta` and :func:`truncated_gamma` draw them by
the inverse CDF (SciPy's regularised incomplete beta and gamma functions);
:func:`truncated_normal` is SciPy's ``truncnorm``.

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
from scipy import special, stats

__all__ = ["truncated_beta", "truncated_dirichlet_gibbs", "truncated_gamma", "truncated_normal"]

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
        a_t, b_t, lo_t, hi_t = a_[tail], b_[tail], lo[tail], hi[tail]
        x[tail] = _log_linear_draw(
            lo_t,
            hi_t,
            (a_t - 1) / lo_t - (b_t - 1) / (1 - lo_t),
            (a_t - 1) / hi_t - (b_t - 1) / (1 - hi_t),
            u[tail],
        )
    x = np.clip(x, lo, hi)
    return np.where(flip, 1 - x, x)


def truncated_gamma(
    shape: np.ndarray,
    rate: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw from Gamma(shape, rate) truncated to [lower, upper], elementwise (broadcast).

    Inverse-CDF sampling on the standard Gamma with SciPy's regularised incomplete gamma
    functions P and Q and their inverses. The interval is mapped through P when it lies in the
    lower half of the distribution and through Q otherwise, so both tails keep full relative
    precision. When the interval carries less than 1e-12 of the mass, the draw uses the
    exponential approximation of the log-density at the end nearest the mode (as
    :func:`truncated_beta`). ``upper`` may be ``inf``.

    Raises
    ------
    ValueError
        If shape or rate is not > 0, or not 0 <= lower < upper.
    """
    shape, rate, lower, upper = np.broadcast_arrays(
        *(np.asarray(v, np.float64) for v in (shape, rate, lower, upper))
    )
    if np.any(~(shape > 0)) or np.any(~((rate > 0) & np.isfinite(rate))):
        raise ValueError("Gamma shape and rate must be > 0 (and the rate finite)")
    if np.any(~((0 <= lower) & (lower < upper))):
        raise ValueError("need 0 <= lower < upper")
    lo, hi = lower * rate, upper * rate  # the standard Gamma(shape, 1)
    flip = special.gammainc(shape, lo) > 0.5
    p_lo = np.where(flip, special.gammaincc(shape, hi), special.gammainc(shape, lo))
    p_hi = np.where(flip, special.gammaincc(shape, lo), special.gammainc(shape, hi))
    u = rng.uniform(size=shape.shape)
    q = p_lo + u * (p_hi - p_lo)
    x = np.where(flip, special.gammainccinv(shape, q), special.gammaincinv(shape, q))
    tail = ~(p_hi - p_lo > _MIN_MASS * np.maximum(p_hi, 1e-300))
    if np.any(tail):
        k, lo_t, hi_t = shape[tail], lo[tail], hi[tail]
        with np.errstate(divide="ignore"):
            slope_lo = (k - 1) / lo_t - 1
        x[tail] = _log_linear_draw(lo_t, hi_t, slope_lo, (k - 1) / hi_t - 1, u[tail])
    return np.clip(x, lo, hi) / rate


def truncated_normal(
    mean: np.ndarray,
    sd: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw from Normal(mean, sd²) truncated to [lower, upper], elementwise (broadcast).

    SciPy's ``truncnorm``, which keeps its accuracy far in the tails.

    Raises
    ------
    ValueError
        If sd is not > 0 or not lower < upper.
    """
    mean, sd, lower, upper = np.broadcast_arrays(
        *(np.asarray(v, np.float64) for v in (mean, sd, lower, upper))
    )
    if np.any(~(sd > 0)) or np.any(~(lower < upper)):
        raise ValueError("need sd > 0 and lower < upper")
    draws = stats.truncnorm.rvs(
        (lower - mean) / sd,
        (upper - mean) / sd,
        loc=mean,
        scale=sd,
        size=mean.shape,
        random_state=rng,
    )
    return np.clip(draws, lower, upper)


def _log_linear_draw(lo, hi, slope_lo, slope_hi, u):
    """Truncated-exponential draw on [lo, hi] from the log-density's slope at its higher end.

    Used only when [lo, hi] carries a negligible share of the mass, i.e. sits in a tail where
    the density is monotone: increasing (slope at ``hi`` > 0) or decreasing. ``hi`` may be
    ``inf`` when the density decreases.
    """
    mode_high = slope_hi > 0  # log-density increasing at hi
    slope = np.abs(np.where(mode_high, slope_hi, slope_lo))
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
