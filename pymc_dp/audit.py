"""Empirical privacy audits: a high-confidence lower bound on ε from repeated runs.

Run a mechanism M many times on two neighbouring datasets D0 and D1 and count how often an
event S occurs. If M is (ε, δ)-differentially private then, for every event S and in both
directions,

    P[M(D0) ∈ S] ≤ e^ε · P[M(D1) ∈ S] + δ,   so   ε ≥ log((P[M(D0) ∈ S] − δ) / P[M(D1) ∈ S]).

Replacing the two probabilities by exact (Clopper–Pearson) confidence bounds — the lower bound
in the numerator, the upper bound in the denominator — gives a lower bound on ε that holds with
probability at least 1 − α (the audit of Jagielski, Ullman & Oprea, NeurIPS 2020; see also
Ding et al., CCS 2018, on testing for violations of differential privacy).

An audit is a *statistical, necessary* check: a sound ε-DP mechanism yields a lower bound
≤ ε with probability ≥ 1 − α, so a bound above the claimed ε is strong evidence of a broken
mechanism (wrong sensitivity, wrong scale, leaky code path). A bound below ε proves nothing:
privacy is established by the proof in the mechanism's docstring, never by an audit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from pymc_dp.ledger import validate_delta

__all__ = [
    "AuditResult",
    "audit_mechanism",
    "clopper_pearson",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_counts",
]


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided confidence interval for a binomial proportion.

    Parameters
    ----------
    k : int
        Number of successes, 0 <= k <= n.
    n : int
        Number of trials, n >= 1.
    alpha : float, default 0.05
        The interval has coverage at least 1 − alpha; each one-sided tail has level alpha / 2.

    Returns
    -------
    lower, upper : float
        ``lower = Beta⁻¹(alpha/2; k, n − k + 1)`` (0 when k = 0) and
        ``upper = Beta⁻¹(1 − alpha/2; k + 1, n − k)`` (1 when k = n). For k = 0,
        ``upper = 1 − (alpha/2)^(1/n)``.

    Raises
    ------
    ValueError
        If k, n or alpha is out of range.
    """
    k, n = _as_count(k, "k"), _as_count(n, "n")
    if n < 1 or k > n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def epsilon_lower_bound_from_counts(
    hits_0: int,
    n_0: int,
    hits_1: int,
    n_1: int,
    delta: float = 0.0,
    alpha: float = 0.05,
) -> float:
    """Lower bound on ε from event counts ``hits_0 / n_0`` on D0 and ``hits_1 / n_1`` on D1.

    Takes the largest of four bounds — event S and its complement, each in both directions —
    ``log((p_a_lower − delta) / p_b_upper)``. The four bounds use four one-sided confidence
    statements (a lower and an upper bound on each of p0 and p1; the complement's bounds are
    1 minus these), so each Clopper–Pearson interval is two-sided at level alpha / 2
    (one-sided alpha / 4, Bonferroni). With probability ≥ 1 − alpha all four statements hold,
    and then every bound is ≤ the true ε of an (ε, delta)-DP mechanism.

    Parameters
    ----------
    hits_0, n_0 : int
        Runs on D0 in which the event occurred, and runs on D0.
    hits_1, n_1 : int
        The same on D1.
    delta : float, default 0.0
        The δ of the (ε, δ) guarantee being audited.
    alpha : float, default 0.05
        Total probability that the bound exceeds the true ε of a sound mechanism.

    Returns
    -------
    float
        The lower bound, or 0.0 when no bound is positive.
    """
    delta = validate_delta(delta)
    low_0, high_0 = clopper_pearson(hits_0, n_0, alpha / 2)
    low_1, high_1 = clopper_pearson(hits_1, n_1, alpha / 2)
    candidates = (
        (low_0, high_1),  # S, D0 over D1
        (low_1, high_0),  # S, D1 over D0
        (1.0 - high_0, 1.0 - low_1),  # complement of S, D0 over D1
        (1.0 - high_1, 1.0 - low_0),  # complement of S, D1 over D0
    )
    best = 0.0
    for numerator_lower, denominator_upper in candidates:
        numerator = numerator_lower - delta
        if numerator > 0.0 and denominator_upper > 0.0:
            best = max(best, math.log(numerator / denominator_upper))
    return best


def epsilon_lower_bound(
    outputs_0: Iterable[Any] | np.ndarray,
    outputs_1: Iterable[Any] | np.ndarray,
    event: Callable[[Any], Any],
    delta: float = 0.0,
    alpha: float = 0.05,
    *,
    vectorized: bool = False,
) -> float:
    """High-confidence lower bound on ε from outputs of a mechanism on neighbouring datasets.

    Estimates p0 = P[M(D0) ∈ S] and p1 = P[M(D1) ∈ S] for the event S and returns
    :func:`epsilon_lower_bound_from_counts` of the counts: the largest of
    ``log((p0_lower − delta) / p1_upper)``, the same with D0 and D1 swapped, and both again for
    the complement of S, with Bonferroni-corrected Clopper–Pearson bounds.

    A sound (ε, delta)-DP mechanism gives a lower bound ≤ ε with probability ≥ 1 − alpha. This
    is a statistical audit — a necessary check that can expose a broken mechanism — not a
    proof of privacy. The event must be chosen *before* looking at the outputs (e.g. from the
    mechanism's likelihood ratio on the worst-case pair); choosing it from the same outputs
    voids the guarantee.

    Parameters
    ----------
    outputs_0, outputs_1 : iterable or ndarray
        Outputs of independent runs of the mechanism on D0 and on D1 (one output per element,
        or per index of the leading axis of an array).
    event : callable
        ``event(output) -> bool``. With ``vectorized=True``, ``event(outputs)`` is called once
        on each stacked array (leading axis = runs) and must return a boolean array of the
        number of runs.
    delta : float, default 0.0
        The δ of the audited (ε, δ) guarantee.
    alpha : float, default 0.05
        Total error probability of the bound.
    vectorized : bool, default False
        Evaluate ``event`` once on the stacked outputs instead of once per output.

    Returns
    -------
    float
        The lower bound on ε (0.0 when no bound is positive).

    Raises
    ------
    ValueError
        If either set of outputs is empty, or a vectorised event returns the wrong shape.
    """
    hits_0, n_0 = _count_hits(outputs_0, event, vectorized)
    hits_1, n_1 = _count_hits(outputs_1, event, vectorized)
    return epsilon_lower_bound_from_counts(hits_0, n_0, hits_1, n_1, delta, alpha)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_mechanism`.

    Attributes
    ----------
    epsilon_lower_bound : float
        Lower bound on ε, valid with probability ≥ 1 − alpha for a sound mechanism.
    frequency_0, frequency_1 : float
        Empirical frequencies of the event on D0 and on D1.
    n_runs : int
        Runs on each dataset.
    alpha, delta : float
        Confidence parameter and audited δ.
    """

    epsilon_lower_bound: float
    frequency_0: float
    frequency_1: float
    n_runs: int
    alpha: float = 0.05
    delta: float = 0.0


def audit_mechanism(
    mechanism: Callable[[Any, np.random.Generator], Any],
    d0: Any,
    d1: Any,
    event: Callable[[Any], Any],
    n_runs: int,
    rng: np.random.Generator,
    alpha: float = 0.05,
    delta: float = 0.0,
) -> AuditResult:
    """Run ``mechanism(dataset, rng)`` ``n_runs`` times on each of ``d0`` and ``d1`` and bound ε.

    Each run must be a complete, independent execution of the mechanism (e.g. with a fresh
    privacy ledger); the event is evaluated on each output as it is produced.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(dataset, rng) -> output``.
    d0, d1 : object
        A neighbouring pair of datasets (ideally the worst-case pair).
    event : callable
        ``event(output) -> bool``, fixed in advance.
    n_runs : int
        Runs on each dataset (>= 1).
    rng : numpy.random.Generator
        Passed to every run.
    alpha : float, default 0.05
        Total error probability of the bound.
    delta : float, default 0.0
        The δ of the audited (ε, δ) guarantee.

    Returns
    -------
    AuditResult
    """
    n_runs = _as_count(n_runs, "n_runs")
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    hits_0 = sum(bool(event(mechanism(d0, rng))) for _ in range(n_runs))
    hits_1 = sum(bool(event(mechanism(d1, rng))) for _ in range(n_runs))
    bound = epsilon_lower_bound_from_counts(hits_0, n_runs, hits_1, n_runs, delta, alpha)
    return AuditResult(bound, hits_0 / n_runs, hits_1 / n_runs, n_runs, float(alpha), float(delta))


def _count_hits(
    outputs: Iterable[Any] | np.ndarray, event: Callable[[Any], Any], vectorized: bool
) -> tuple[int, int]:
    if vectorized:
        stacked = np.asarray(outputs)
        hits = np.asarray(event(stacked), dtype=bool)
        if stacked.ndim == 0 or hits.shape != (stacked.shape[0],):
            raise ValueError(
                "a vectorised event must return one boolean per run, got shape "
                f"{hits.shape} for outputs of shape {stacked.shape}"
            )
        n, k = int(stacked.shape[0]), int(hits.sum())
    else:
        n = k = 0
        for output in outputs:
            n += 1
            k += bool(event(output))
    if n == 0:
        raise ValueError("no outputs: an audit needs at least one run per dataset")
    return k, n


def _as_count(value: int, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)
