"""Beta–Bernoulli and Beta–Binomial conjugate families.

Per-record statistic S(x) = (successes, failures) = (y, m − y) for m trials (m = 1 for
Bernoulli). Aggregate over records in a group: (n₊, n₋). Posterior (Foulds et al. 2016, §3.1,
Beta–Bernoulli example; eq. 11): Beta(α + n₊, β + n₋). Foulds prints h(x) = 0 for the Bernoulli
base measure; the correct value is h(x) = 1 (log h = 0), which is what the log-likelihood
below uses. For the Binomial, log h(x) = log C(m, y) depends only on the data; it is dropped
(it is a constant in θ, and it would read raw data).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pymc_dp.families.base import (
    ConjugateFamily,
    RecordDomain,
    reject_out_of_range,
    require_integers,
)

__all__ = ["BetaBernoulli", "BetaBinomial"]

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

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable)
        reject_out_of_range(values, 0, 1, variable, "outcomes")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.float64).ravel()
        return np.column_stack([y, 1.0 - y])


class BetaBinomial(_BetaFamily):
    """Beta prior, Binomial likelihood with at most ``max_trials`` trials per record.

    S(x) = (y, m − y); ||S(x)||_1 = m ≤ max_trials.
    """

    name = "beta-binomial"
    likelihood = "binomial"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable)
        trials = require_integers(np.asarray(domain.trials), variable, "trials")
        reject_out_of_range(trials, 0, domain.max_trials, variable, "trial counts")
        reject_out_of_range(values, 0, np.broadcast_to(trials, values.shape), variable, "counts")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.float64).ravel()
        trials = np.broadcast_to(np.asarray(domain.trials, dtype=np.float64), y.shape)
        return np.column_stack([y, trials - y])
