"""Dirichlet–Categorical and Dirichlet–Multinomial conjugate families.

Per-record statistic S(x): the one-hot vector of the category (Categorical) or the vector of
counts (Multinomial, at most ``max_trials`` trials). Aggregate over records in a group: the
count vector n_{g,:}. Posterior (Foulds et al. 2016, §3.1 eq. 11; App. E.1 eq. 69):
Dirichlet(a_g + n_{g,:}). The Multinomial coefficient log h(x) depends only on the data and is
dropped.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.families.base import (
    ConjugateFamily,
    RecordDomain,
    reject_out_of_range,
    require_integers,
)

__all__ = ["DirichletCategorical", "DirichletMultinomial"]

_TINY = np.finfo(np.float64).tiny


class _DirichletFamily(ConjugateFamily):
    prior = "dirichlet"

    def log_likelihood(self, theta: pt.TensorVariable, table: np.ndarray) -> pt.TensorVariable:
        return pt.sum(pt.as_tensor(table) * pt.log(theta))

    def posterior_parameters(
        self, prior_params: tuple[np.ndarray, ...], table: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        (concentration,) = prior_params
        return (concentration + table,)

    def sample_posterior(
        self, rng: np.random.Generator, posterior_params: tuple[np.ndarray, ...]
    ) -> np.ndarray:
        gammas = rng.standard_gamma(posterior_params[0])
        gammas = np.maximum(gammas, _TINY)  # tiny shapes can underflow to exactly 0
        return gammas / gammas.sum(axis=-1, keepdims=True)


class DirichletCategorical(_DirichletFamily):
    """Dirichlet prior, Categorical likelihood over K categories: S(x) = one-hot, ||S||_1 = 1."""

    name = "dirichlet-categorical"
    likelihood = "categorical"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable, "categories")
        reject_out_of_range(values, 0, domain.n_categories - 1, variable, "categories")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.int64).ravel()
        one_hot = np.zeros((y.size, domain.n_categories), dtype=np.float64)
        one_hot[np.arange(y.size), y] = 1.0
        return one_hot

    def record_totals(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        return np.ones(np.asarray(data).size)


class DirichletMultinomial(_DirichletFamily):
    """Dirichlet prior, Multinomial likelihood with at most ``max_trials`` trials per record.

    S(x) = the record's count vector; ||S(x)||_1 = its number of trials ≤ max_trials.
    """

    name = "dirichlet-multinomial"
    likelihood = "multinomial"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        counts = require_integers(data, variable, "counts")
        if counts.ndim != 2 or counts.shape[1] != domain.n_categories:
            raise InvalidPrivateDataError(
                f"{variable}: counts must have shape (n_records, {domain.n_categories}), "
                f"got {counts.shape}"
            )
        reject_out_of_range(counts, 0, domain.max_trials, variable, "counts")
        totals = counts.sum(axis=1)
        trials = require_integers(np.asarray(domain.trials), variable, "trials")
        reject_out_of_range(trials, 0, domain.max_trials, variable, "trial counts")
        mismatch = totals != np.broadcast_to(trials, totals.shape)
        if mismatch.any():
            raise InvalidPrivateDataError(
                f"{variable}: {int(mismatch.sum())} records whose counts do not sum to their "
                "number of trials. Nothing was released."
            )

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        return np.asarray(data, dtype=np.float64).reshape(-1, domain.n_categories)
