"""The paper's worked examples: Laplace binary sum (Fig. 2), randomised response (eq. 8),
and the privatised single count (Example 6.7, Fig. 4) as a PyMC model with its exact posterior.

* :func:`~pymc_dp.limits.laplace_sum_bounds` — Example 4.4: bounds on the density of a
  Laplace-privatised sum of n binary records, under any data model (Fig. 2 at ε = 0.1 and 0.25, n =
  10).
* :func:`~pymc_dp.limits.randomised_response_pmf`,
  :func:`~pymc_dp.limits.randomised_response_bounds` — Examples 2.3 and 4.5: the law of randomised
  response and the bounds of eq. 8 on the probability of a released bit vector under any data model.
* :func:`~pymc_dp.limits.privatised_count_model`,
  :func:`~pymc_dp.limits.privatised_count_loglikelihood`,
  :func:`~pymc_dp.limits.privatised_count_posterior` — Example 6.7: θ ~ Gamma(3, 1), x | θ ~
  Poisson(θ), the count clamped to [0, 6] and released with Laplace noise of scale 6/ε; the exact
  posterior (a finite sum, no MCMC) lies inside the prior density times e^{±ε}.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import stats
from scipy.special import logsumexp

from pymc_dp.limits._common import Bounds, check_epsilon_value, scalar_or_array
from pymc_dp.limits.bounds import privatised_data_bounds

__all__ = [
    "laplace_sum_bounds",
    "privatised_count_loglikelihood",
    "privatised_count_model",
    "privatised_count_posterior",
    "randomised_response_bounds",
    "randomised_response_pmf",
]


def _positive_epsilon(epsilon: float) -> float:
    value = check_epsilon_value(epsilon)
    if value == 0:
        raise ValueError("epsilon must be > 0 for a noise mechanism")
    return value


def _count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def laplace_sum_bounds(
    t: Any, epsilon: float, n: int, distance: float | None = None, *, sharp: bool = False
) -> Bounds:
    """Bounds on the density of a Laplace-privatised sum of n binary records (Fig. 2).

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §4 Example 4.4 and Fig. 2 (Thm 4.1 applied to q(x) = Σ x_i released as
    q(x) + Laplace(1/ε), density p_q(t) = (ε/2) e^{-ε|t − q|}): for every data model on
    datasets of n records,

        l(t) = e^{-εΔ} max_{q∈[0,n]} p_q(t) <= p_θ(t) <= e^{εΔ} min_{q∈[0,n]} p_q(t) = u(t),

    with Δ = n in the figure (the analyst bounds the number of records by n). The extremes
    over the interval [0, n] (as in the authors' figure code) are
    max = (ε/2) e^{-ε·dist(t, [0, n])} and min = (ε/2) e^{-ε·max(|t|, |t − n|)}; they bound
    the integer sums too, since any two p_q with q ∈ [0, n] are within e^{εn}. Values:
    ε = 0.1: l = 0.01839 on [0, 10], u(5) = 0.08244, u(0) = 0.05; ε = 0.25: l = 0.01026 on
    [0, 10], u(5) = 0.4363.

    Parameters
    ----------
    t : array_like of float
        Released values at which to bound the density (any shape).
    epsilon : float
        ε > 0 of the release (the Laplace scale is 1/ε: sensitivity 1).
    n : int
        Number of records, >= 1 (the sum lies in [0, n]).
    distance : float, optional
        Δ in records; default n, as in Fig. 2 (``math.inf`` gives [0, ∞]).
    sharp : bool
        Intersect with [min_q p_q(t), max_q p_q(t)] [DERIVED], much tighter here.

    Returns
    -------
    Bounds
        ``(lower, upper)`` densities (per unit of t) of the shape of ``t``.

    Raises
    ------
    ValueError
        If ε <= 0, n is not a positive integer, t is not finite, or Δ < n would make the
        figure's densities inconsistent with ε-DP.
    """
    eps = _positive_epsilon(epsilon)
    n = _count(n, "n", 1)
    values = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError("t must be finite")
    outside = np.maximum(np.maximum(-values, values - n), 0.0)
    farthest = np.maximum(np.abs(values), np.abs(values - n))
    highest = 0.5 * eps * np.exp(-eps * outside)
    lowest = 0.5 * eps * np.exp(-eps * farthest)
    delta_records = float(n) if distance is None else distance
    return privatised_data_bounds(np.stack([highest, lowest]), eps, delta_records, sharp=sharp)


def randomised_response_pmf(t: Any, x: Any, epsilon: float) -> Any:
    """P(T = t | x) of randomised response: each bit kept w.p. e^ε/(1 + e^ε), else flipped.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §2 Example 2.3: on {0, 1}^n each bit is flipped independently with probability
    1/(1 + e^ε) (not 1/(1 + e^{ε/2})); the mechanism is ε-DP for the Hamming metric, and
    local: P_x = ⊗_i P_{x_i}.

    Parameters
    ----------
    t, x : array_like of {0, 1}, shapes broadcasting, last axis the n bits
        Released and true bit vectors.
    epsilon : float
        ε > 0 per bit.

    Returns
    -------
    float or ndarray
        The probability, of the broadcast shape without the last axis.

    Raises
    ------
    ValueError
        If ε <= 0 or a bit is not 0 or 1.
    """
    eps = _positive_epsilon(epsilon)
    tt, xx = np.asarray(t), np.asarray(x)
    if not (np.isin(tt, (0, 1)).all() and np.isin(xx, (0, 1)).all()):
        raise ValueError("t and x must hold bits (0 or 1)")
    kept = np.sum(tt == xx, axis=-1)
    flipped = np.sum(tt != xx, axis=-1)
    log_keep = eps - np.logaddexp(0.0, eps)
    log_flip = -np.logaddexp(0.0, eps)
    return scalar_or_array(np.exp(kept * log_keep + flipped * log_flip))


def randomised_response_bounds(epsilon: float, n: Any) -> Bounds:
    """Bounds of eq. 8 on P_θ(T = t) for n randomised-response bits, under any data model.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §4 Example 4.5, eq. 8 (Lemma F.7 with Δ = n, the Hamming diameter of {0, 1}^n):
    (1 + e^ε)^{-n} <= p_θ(t) <= e^{nε}(1 + e^ε)^{-n} = (e^ε/(1 + e^ε))^n, whatever t's
    values. At ε = 1: n = 1 → (0.26894, 0.73106); n = 10 → (1.9796e-6, 0.043604).
    These are exactly the smallest and largest p_x(t) over x ∈ {0, 1}^n.

    Parameters
    ----------
    epsilon : float
        ε > 0 per bit.
    n : int or array_like of int
        The number of released bits |t| (>= 1).

    Returns
    -------
    Bounds
        ``(lower, upper)`` probabilities of the shape of ``n``.

    Raises
    ------
    ValueError
        If ε <= 0 or an n is not a positive integer.
    """
    eps = _positive_epsilon(epsilon)
    counts = np.asarray(n)
    if counts.size == 0 or not np.issubdtype(counts.dtype, np.integer) or np.any(counts < 1):
        raise ValueError("n must hold integers >= 1 (numbers of released bits)")
    log_norm = np.logaddexp(0.0, eps)
    lower = np.exp(-counts * log_norm)
    upper = np.exp(counts * (eps - log_norm))
    return Bounds(scalar_or_array(lower), scalar_or_array(upper))


def _clamp_args(lower: int, upper: int) -> tuple[int, int]:
    lo = _count(lower, "lower", 0)
    hi = _count(upper, "upper", 0)
    if hi <= lo:
        raise ValueError(f"need lower < upper, got {lower!r} and {upper!r}")
    return lo, hi


def _clamped_poisson_logpmf(theta: np.ndarray, lower: int, upper: int) -> np.ndarray:
    """log P(clamp(X) = k | θ) for k = lower..upper, on a last axis."""
    middle = np.arange(lower + 1, upper)
    th = theta[..., None]
    return np.concatenate(
        [
            stats.poisson.logcdf(lower, th),
            stats.poisson.logpmf(middle, th),
            stats.poisson.logsf(upper - 1, th),
        ],
        axis=-1,
    )


def privatised_count_loglikelihood(
    released: Any, theta: Any, epsilon: float, *, lower: int = 0, upper: int = 6
) -> Any:
    """log p(s | θ) of a Poisson count clamped to [lower, upper] and released with Laplace noise.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Example 6.7: x | θ ~ Poisson(θ), s = clamp(x, lower, upper) + Laplace(b) with
    b = (upper − lower)/ε (sensitivity upper − lower; one record, so ε-DP with Δ = 1). The
    latent count is summed out exactly: counts at or beyond a clamp point are lumped,

        p(s | θ) = Σ_{k=lower}^{upper} P(clamp(X) = k | θ) · Laplace(s; k, b).

    Parameters
    ----------
    released : array_like of float
        Released values s (broadcast against ``theta``).
    theta : array_like of float
        Poisson means θ > 0.
    epsilon : float
        ε > 0 of the release.
    lower, upper : int
        The clamp interval (0 <= lower < upper); Example 6.7 uses [0, 6].

    Returns
    -------
    float or ndarray
        log p(s | θ) (nats; s is continuous, so a log-density per unit of s).

    Raises
    ------
    ValueError
        If ε <= 0, the clamp interval is invalid, or θ <= 0.
    """
    eps = _positive_epsilon(epsilon)
    lo, hi = _clamp_args(lower, upper)
    s = np.asarray(released, dtype=float)
    th = np.asarray(theta, dtype=float)
    if not np.all(th > 0) or not np.all(np.isfinite(th)) or not np.all(np.isfinite(s)):
        raise ValueError("theta must be finite and > 0, and released finite")
    s, th = np.broadcast_arrays(s, th)
    ks = np.arange(lo, hi + 1)
    log_laplace = stats.laplace.logpdf(s[..., None], loc=ks, scale=(hi - lo) / eps)
    return scalar_or_array(logsumexp(_clamped_poisson_logpmf(th, lo, hi) + log_laplace, axis=-1))


def privatised_count_posterior(
    released: float,
    theta: Any,
    epsilon: float,
    *,
    alpha: float = 3.0,
    rate: float = 1.0,
    lower: int = 0,
    upper: int = 6,
) -> Any:
    """The exact posterior density π(θ | s) of Example 6.7 (no MCMC, no quadrature).

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 eq. 13 (π(θ | t) ∝ p_θ(t) π(θ)) and Example 6.7 / Fig. 4 (θ ~ Gamma(3, 1),
    clamp [0, 6], ε = 1; the paper draws each exact posterior by ABC rejection). Here the
    normalising constant is a finite sum: under the Gamma(α, rate) prior the count is
    negative binomial (α, rate/(1 + rate)), so p(s) = Σ_k P(clamp(X) = k) Laplace(s; k, b).
    Thm 6.4 puts the result inside the prior density times e^{±ε}
    (:func:`pymc_dp.limits.posterior_density_bounds` with distance 1).

    Parameters
    ----------
    released : float
        The released value s.
    theta : array_like of float
        Points θ > 0 at which to evaluate the density.
    epsilon : float
        ε > 0 of the release.
    alpha, rate : float
        Shape and rate of the Gamma prior (> 0).
    lower, upper : int
        The clamp interval.

    Returns
    -------
    float or ndarray
        π(θ | s), per unit of θ, of the shape of ``theta``.

    Raises
    ------
    ValueError
        If a parameter is invalid or θ <= 0.
    """
    eps = _positive_epsilon(epsilon)
    lo, hi = _clamp_args(lower, upper)
    if not (alpha > 0 and rate > 0 and np.isfinite(alpha) and np.isfinite(rate)):
        raise ValueError("alpha and rate must be finite and > 0")
    th = np.asarray(theta, dtype=float)
    s = float(released)
    loglik = privatised_count_loglikelihood(s, th, eps, lower=lo, upper=hi)
    log_prior = stats.gamma.logpdf(th, alpha, scale=1.0 / rate)
    nb = stats.nbinom(alpha, rate / (1.0 + rate))
    log_marginal_counts = np.concatenate(
        [[nb.logcdf(lo)], nb.logpmf(np.arange(lo + 1, hi)), [nb.logsf(hi - 1)]]
    )
    log_laplace = stats.laplace.logpdf(s, loc=np.arange(lo, hi + 1), scale=(hi - lo) / eps)
    log_evidence = logsumexp(log_marginal_counts + log_laplace)
    return scalar_or_array(np.exp(log_prior + loglik - log_evidence))


def privatised_count_model(
    released: float | None,
    epsilon: float,
    *,
    alpha: float = 3.0,
    rate: float = 1.0,
    lower: int = 0,
    upper: int = 6,
) -> pm.Model:
    """Example 6.7 as a PyMC model: Gamma prior, clamped Poisson count, Laplace observation.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Example 6.7 / Fig. 4: ``theta`` ~ Gamma(α, rate); the count x | θ ~
    Poisson(θ) is clamped to [lower, upper]; ``released`` = clamp(x) + Laplace(b),
    b = (upper − lower)/ε. The latent count is summed out exactly
    (:func:`privatised_count_loglikelihood`): ``released`` is a ``pm.Mixture`` of Laplace
    components at k = lower..upper with weights P(clamp(X) = k | θ) (Poisson pmf in the
    middle, the Poisson cdf and survival function at the clamp points, via the regularised
    incomplete gamma function), so NUTS samples ``theta`` and
    ``pm.sample_prior_predictive`` draws s from the prior predictive, as Fig. 4's s_j.

    Parameters
    ----------
    released : float or None
        The observed release s; None leaves ``released`` unobserved (for prior
        predictive draws only).
    epsilon : float
        ε > 0 of the release (sets b).
    alpha, rate : float
        Gamma prior shape and rate (Example 6.7: 3 and 1).
    lower, upper : int
        The clamp interval (Example 6.7: [0, 6]).

    Returns
    -------
    pymc.Model
        Free variable ``theta``; ``released`` observed (or free when ``released`` is None).

    Raises
    ------
    ValueError
        If a parameter is invalid.
    """
    eps = _positive_epsilon(epsilon)
    lo, hi = _clamp_args(lower, upper)
    if not (alpha > 0 and rate > 0 and np.isfinite(alpha) and np.isfinite(rate)):
        raise ValueError("alpha and rate must be finite and > 0")
    with pm.Model() as model:
        theta = pm.Gamma("theta", alpha=alpha, beta=rate)
        middle = np.arange(lo + 1, hi)
        log_middle = middle * pt.log(theta) - theta - pt.gammaln(middle + 1.0)
        weights = pt.concatenate(
            [
                pt.gammaincc(lo + 1.0, theta)[None],  # P(X <= lower)
                pt.exp(log_middle),
                pt.gammainc(float(hi), theta)[None],  # P(X >= upper)
            ]
        )
        pm.Mixture(
            "released",
            w=weights,
            comp_dists=pm.Laplace.dist(mu=np.arange(lo, hi + 1, dtype=float), b=(hi - lo) / eps),
            observed=None if released is None else float(released),
        )
    return model
