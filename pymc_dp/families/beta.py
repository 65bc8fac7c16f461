"""The Beta family: Beta–Bernoulli and Beta–Binomial statistics, their Δ, the tempered update.

Per-record statistic S(x) = (successes, failures) = (y, m − y) for m trials (m = 1 for
Bernoulli). Aggregate over records in a group: (n₊, n₋). Posterior (Foulds et al. 2016, §3.1,
Beta–Bernoulli example; eq. 11): Beta(α + n₊, β + n₋). Foulds prints h(x) = 0 for the Bernoulli
base measure; the correct value is h(x) = 1 (log h = 0), which is what the log-likelihood
below uses. For the Binomial, log h(x) = log C(m, y) depends only on the data; it is dropped
(it is a constant in θ, and it would read raw data).

Log-likelihood bounds Δ (nats; :mod:`pymc_dp.families.bounds`) of one record with p in
[a0, 1 − a0]: :func:`bernoulli_log_likelihood_bound` (Foulds eq. 15) and
:func:`binomial_log_likelihood_bound`; with private trials,
:func:`~pymc_dp.families.base.private_trials_log_likelihood_bound`.

Tempered update (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19): :func:`beta_tempered_parameters`
and :func:`beta_tempered_draw`, an exact inverse-CDF draw of the truncated Beta.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from scipy.special import gammaln

from pymc_dp.families.base import (
    ConjugateFamily,
    RecordDomain,
    probability_truncation,
    reject_out_of_range,
    require_integers,
)
from pymc_dp.truncated import truncated_beta

__all__ = [
    "BetaBernoulli",
    "BetaBinomial",
    "bernoulli_log_likelihood_bound",
    "beta_tempered_draw",
    "beta_tempered_parameters",
    "binomial_log_likelihood_bound",
]

_TINY = np.finfo(np.float64).tiny


class _BetaFamily(ConjugateFamily):
    prior = "beta"

    def log_likelihood(self, theta: pt.TensorVariable, table: np.ndarray) -> pt.TensorVariable:
        successes = pt.as_tensor(table[:, 0])
        failures = pt.as_tensor(table[:, 1])
        return pt.sum(successes * pt.log(theta) + failures * pt.log1p(-theta))

    def posterior_parameters(
        self, prior_params: tuple[np.ndarray, ...], table: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        alpha, beta = prior_params
        return alpha + table[:, 0], beta + table[:, 1]

    def sample_posterior(
        self, rng: np.random.Generator, posterior_params: tuple[np.ndarray, ...]
    ) -> np.ndarray:
        draw = rng.beta(*posterior_params)
        # Keep the draw inside (0, 1) so that the log-odds transform stays finite.
        return np.clip(draw, _TINY, 1.0 - np.finfo(np.float64).epsneg)


class BetaBernoulli(_BetaFamily):
    """Beta prior, Bernoulli likelihood: S(x) = (x, 1 − x), ||S(x)||_1 = 1."""

    name = "beta-bernoulli"
    likelihood = "bernoulli"
    pattern = "Bernoulli(p=p or p[group]) with p ~ Beta"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable)
        reject_out_of_range(values, 0, 1, variable, "outcomes")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.float64).ravel()
        return np.column_stack([y, 1.0 - y])

    def public_trials_log_likelihood_bound(
        self, domain: RecordDomain, lower: float, smallest: float
    ) -> float:
        return bernoulli_log_likelihood_bound(smallest)


class BetaBinomial(_BetaFamily):
    """Beta prior, Binomial likelihood with at most ``max_trials`` trials per record.

    S(x) = (y, m − y); ||S(x)||_1 = m ≤ max_trials.
    """

    name = "beta-binomial"
    likelihood = "binomial"
    pattern = "Binomial(n, p=p or p[group]) with p ~ Beta"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable)
        trials = require_integers(np.asarray(domain.trials), variable, "trials")
        reject_out_of_range(trials, 0, domain.max_trials, variable, "trial counts")
        reject_out_of_range(values, 0, np.broadcast_to(trials, values.shape), variable, "counts")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.float64).ravel()
        trials = np.broadcast_to(np.asarray(domain.trials, dtype=np.float64), y.shape)
        return np.column_stack([y, trials - y])

    def public_trials_log_likelihood_bound(
        self, domain: RecordDomain, lower: float, smallest: float
    ) -> float:
        if domain.trials == 1:
            return bernoulli_log_likelihood_bound(smallest)
        return binomial_log_likelihood_bound(int(domain.trials), smallest)


# --- log-likelihood bounds Δ ----------------------------------------------------------------


def bernoulli_log_likelihood_bound(truncation: float) -> float:
    """Δ = log((1 − a0)/a0) for a Bernoulli record with p ∈ [a0, 1 − a0] (Foulds eq. 15).

    For ε = 1 and a0 = 0.2, T = 2Δ/ε = 2 log 4 ≈ 2.77 (Foulds Fig. 1, printed as 2.7).

    Raises
    ------
    ValueError
        If a0 <= 0 (Δ = ∞) or a0 >= 1/2.
    """
    a0 = probability_truncation(truncation, 2, "bernoulli")
    return math.log((1 - a0) / a0)


def binomial_log_likelihood_bound(n_trials: int, truncation: float) -> float:
    """Δ of one Binomial(n, p) record (y in 0..n) with p ∈ [a0, 1 − a0].

    log Pr(y | p) = log C(n, y) + y·logit(p) + n·log(1 − p). The last term cancels between
    records, so Δ = sup_p (max_y f_p − min_y f_p) with f_p(y) = log C(n, y) + y·logit(p).
    This is convex in logit(p), so the supremum is at p = a0 or p = 1 − a0. For n = 1 it is
    the Bernoulli bound.

    It also bounds grouped records (``p[group]``): at p = a0 the range includes f(0) − f(n) =
    n·log((1 − a0)/a0), which is the range of y·log p + (n − y)·log(1 − p) over every y and p,
    i.e. the mechanism's Δ with c = log h (:mod:`pymc_dp.families.bounds`) for any pair of
    groups.

    Raises
    ------
    ValueError
        If n < 1 is not an integer, or a0 is missing or invalid.
    """
    if int(n_trials) != n_trials or n_trials < 1:
        raise ValueError(f"binomial: n_trials must be an integer >= 1, got {n_trials!r}")
    a0 = probability_truncation(truncation, 2, "binomial")
    y = np.arange(int(n_trials) + 1)
    log_choose = gammaln(n_trials + 1) - gammaln(y + 1) - gammaln(n_trials - y + 1)
    ranges = []
    for p in (a0, 1 - a0):
        f = log_choose + y * math.log(p / (1 - p))
        ranges.append(f.max() - f.min())
    return float(max(ranges))


# --- tempered update ------------------------------------------------------------------------


def beta_tempered_parameters(
    prior_parameters: tuple[np.ndarray, ...], statistics: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of Beta(α, β) × successes s, failures f, raised to 1/T.

    Beta((α − 1 + s)/T + 1, (β − 1 + f)/T + 1): every exponent of the conjugate posterior
    divided by T (Foulds et al. 2016, §3.1 eq. 14). ``statistics`` has shape (G, 2), columns
    (s, f); ``prior_parameters`` is (α, β), broadcast to (G,).
    """
    alpha, beta = prior_parameters
    t = float(temperature)
    return (alpha - 1 + statistics[:, 0]) / t + 1, (beta - 1 + statistics[:, 1]) / t + 1


def beta_tempered_draw(
    parameters: tuple[np.ndarray, ...], bounds: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Exact draw of Beta(a, b) truncated to bounds = (lower, upper), elementwise (inverse CDF)."""
    a, b = parameters
    return truncated_beta(a, b, bounds[0], bounds[1], rng)
