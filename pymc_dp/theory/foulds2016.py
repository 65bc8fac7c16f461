"""Foulds, Geumlek, Welling & Chaudhuri (UAI 2016): one posterior sample (OPS) at temperature T.

"On the Theory and Practice of Privacy-Preserving Bayesian Data Analysis" (cited as *Foulds et
al.*). Releasing one draw of Pr(θ, X)^{1/T} is the exponential mechanism with utility
log Pr(θ, X) (§2.2 eq. 6, §3.1 eq. 10 and 14; Wang et al. 2015): it is ε-DP with T = 2Δ/ε,
where Δ is the log-likelihood bound of one replaced record (eq. 9 and 13). This module holds
the closed-form calculators :func:`ops_temperature` (T of an ε) and :func:`ops_epsilon` (ε of a
T), uncapped.

The rest of the paper lives with what it calibrates: the log-likelihood bounds Δ of each family
in :mod:`pymc_dp.families` (eq. 13 and 15, App. E.1), the capped calibration of every
posterior-sampling release in :func:`pymc_dp.mechanisms.exponential.calibrate_temperature`
(§2.2 "cap ε at 2Δ", eq. 14, §4.1 eq. 19-20), the exact Beta-Bernoulli OPS and its App. A
local-ε analysis in :mod:`pymc_dp.mechanisms.ops`, and the HMM of §5 in :mod:`pymc_dp.hmm`.
"""

from __future__ import annotations

import math

from pymc_dp.mechanisms.exponential import calibrate_temperature

__all__ = ["ops_epsilon", "ops_temperature"]


def ops_temperature(log_likelihood_bound: float, epsilon: float) -> float:
    """Temperature T = 2Δ/ε of the one-posterior-sample mechanism.

    Sampling from Pr(θ | X)^{1/T} with Δ = sup_{x, x', θ} |log Pr(x'|θ) - log Pr(x|θ)| (one
    record replaced) is ε-DP (Foulds et al. 2016, §3.1, Theorem 2 and eq. 10; Wang et al.
    2015). The value is *not* capped: a T below 1 would sharpen the posterior, so mechanisms
    that sample cap it at 1 and charge only 2Δ
    (:func:`pymc_dp.mechanisms.exponential.calibrate_temperature`, whose
    ``uncapped_temperature`` this is).

    Parameters
    ----------
    log_likelihood_bound : float
        Δ > 0, in nats, data-independent (from the truncation of the parameter space).
    epsilon : float
        ε > 0.

    Raises
    ------
    ValueError
        If Δ is not finite and > 0 (an untruncated model has Δ = ∞) or ε is invalid.
    """
    bound = _checked_bound(log_likelihood_bound)
    return calibrate_temperature(2.0 * bound, epsilon).uncapped_temperature


def ops_epsilon(log_likelihood_bound: float, temperature: float) -> float:
    """ε = 2Δ/T of one exact draw at temperature T (the inverse of :func:`ops_temperature`).

    Foulds et al. 2016, §3.1 eq. (10) and (14).

    Raises
    ------
    ValueError
        If Δ is not finite and > 0, or T is not finite and > 0.
    """
    temperature = float(temperature)
    if not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    return 2.0 * _checked_bound(log_likelihood_bound) / temperature


def _checked_bound(log_likelihood_bound: float) -> float:
    bound = float(log_likelihood_bound)
    if not math.isfinite(bound) or bound <= 0:
        raise ValueError(
            f"the log-likelihood bound must be finite and > 0, got {log_likelihood_bound!r}; "
            "an untruncated parameter space has an unbounded log-likelihood"
        )
    return bound
