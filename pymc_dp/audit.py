"""Empirical privacy audits: a Clopper–Pearson lower bound on ε from repeated runs.

Run a mechanism many times on two neighbouring datasets D0, D1 and count how often an event S
occurs. For an (ε, δ)-DP mechanism, P[M(D0) ∈ S] ≤ e^ε P[M(D1) ∈ S] + δ, so
ε ≥ log((p0 − δ) / p1). With exact (Clopper–Pearson) confidence bounds on p0 and p1, a sound
mechanism yields a lower bound ≤ ε with probability ≥ 1 − α. This is a statistical, necessary
check (it can catch a broken mechanism), never a proof of privacy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["AuditResult", "audit_mechanism", "clopper_pearson", "epsilon_lower_bound"]


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided (1 − alpha) confidence interval for a binomial proportion k / n."""
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def epsilon_lower_bound(
    hits_0: int, hits_1: int, n_runs: int, delta: float = 0.0, alpha: float = 0.05
) -> float:
    """High-confidence lower bound on ε from event counts on D0 and D1 (both directions,
    event and complement; Bonferroni over the four bounds). Returns 0 if none is positive."""
    level = alpha / 2  # two intervals, each two-sided at alpha/2 → four one-sided bounds
    bounds = []
    for a, b in (
        (hits_0, hits_1),
        (hits_1, hits_0),
        (n_runs - hits_0, n_runs - hits_1),
        (n_runs - hits_1, n_runs - hits_0),
    ):
        p_high_lower = clopper_pearson(a, n_runs, level)[0]
        p_low_upper = clopper_pearson(b, n_runs, level)[1]
        if p_high_lower - delta > 0 and p_low_upper > 0:
            bounds.append(math.log((p_high_lower - delta) / p_low_upper))
    return max([0.0, *bounds])


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_mechanism`: the ε lower bound and the event frequencies."""

    epsilon_lower_bound: float
    frequency_0: float
    frequency_1: float
    n_runs: int


def audit_mechanism(
    mechanism: Callable[[object, np.random.Generator], np.ndarray],
    d0: object,
    d1: object,
    event: Callable[[np.ndarray], bool],
    n_runs: int,
    rng: np.random.Generator,
    delta: float = 0.0,
    alpha: float = 0.05,
) -> AuditResult:
    """Run ``mechanism(dataset, rng)`` ``n_runs`` times on each of ``d0``, ``d1`` and bound ε."""
    hits_0 = sum(bool(event(mechanism(d0, rng))) for _ in range(n_runs))
    hits_1 = sum(bool(event(mechanism(d1, rng))) for _ in range(n_runs))
    bound = epsilon_lower_bound(hits_0, hits_1, n_runs, delta, alpha)
    return AuditResult(bound, hits_0 / n_runs, hits_1 / n_runs, n_runs)
