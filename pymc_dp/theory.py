"""Closed-form privacy calculators (pure functions, each citing its source)."""

from __future__ import annotations

import math

from pymc_dp.ledger import validate_epsilon

__all__ = ["ops_temperature"]


def ops_temperature(delta_log_likelihood: float, epsilon: float) -> float:
    """Temperature T = 2Δ/ε of the one-posterior-sample mechanism.

    Sampling from Pr(θ | X)^{1/T} with Δ = sup_{x, x', θ} |log Pr(x'|θ) - log Pr(x|θ)| (one
    record replaced) is ε-DP (Foulds et al. 2016, §3.1, Theorem 2 and eq. 10; Wang et al.
    2015). The value is *not* capped: a T below 1 would sharpen the posterior, so callers that
    sample cap it at 1 and charge only 2Δ (see :func:`pymc_dp.hmm.ops_cost`).

    Parameters
    ----------
    delta_log_likelihood : float
        Δ > 0, in nats, data-independent (from the truncation of the parameter space).
    epsilon : float
        ε > 0.

    Raises
    ------
    ValueError
        If Δ is not finite and > 0 (an untruncated model has Δ = ∞) or ε is invalid.
    """
    delta = float(delta_log_likelihood)
    if not math.isfinite(delta) or delta <= 0:
        raise ValueError(
            f"the log-likelihood bound must be finite and > 0, got {delta_log_likelihood!r}; "
            "an untruncated parameter space has an unbounded log-likelihood"
        )
    return 2.0 * delta / validate_epsilon(epsilon)
