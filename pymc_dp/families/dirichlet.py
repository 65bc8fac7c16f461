"""The Dirichlet family: Categorical and Multinomial statistics, their Δ, the tempered update.

Per-record statistic S(x): the one-hot vector of the category (Categorical) or the vector of
counts (Multinomial, at most ``max_trials`` trials). Aggregate over records in a group: the
count vector n_{g,:}. Posterior (Foulds et al. 2016, §3.1 eq. 11; App. E.1 eq. 69):
Dirichlet(a_g + n_{g,:}). The Multinomial coefficient log h(x) depends only on the data and is
dropped.

Log-likelihood bounds Δ (nats; :mod:`pymc_dp.families.bounds`) of one record with every
probability >= a0: :func:`categorical_log_likelihood_bound` (Foulds App. E.1; eq. 15 for
K = 2) and :func:`multinomial_log_likelihood_bound`; with private trials,
:func:`~pymc_dp.families.base.private_trials_log_likelihood_bound`.

Tempered update (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19; App. E.1):
:func:`dirichlet_tempered_parameters` and :func:`dirichlet_tempered_draw`, the Fang et al.
(2000) kernel of K − 1 exact pair updates (:func:`pymc_dp.truncated.truncated_dirichlet_gibbs`),
each an exponential mechanism. It is an MCMC kernel, not an independent draw.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.families.base import (
    ConjugateFamily,
    RecordDomain,
    probability_truncation,
    reject_out_of_range,
    require_integers,
)
from pymc_dp.truncated import truncated_dirichlet_gibbs

__all__ = [
    "DirichletCategorical",
    "DirichletMultinomial",
    "categorical_log_likelihood_bound",
    "dirichlet_tempered_draw",
    "dirichlet_tempered_parameters",
    "multinomial_log_likelihood_bound",
]

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
    pattern = "Categorical(p=p or p[group]) with p ~ Dirichlet"

    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        values = require_integers(data, variable, "categories")
        reject_out_of_range(values, 0, domain.n_categories - 1, variable, "categories")

    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        y = np.asarray(data, dtype=np.int64).ravel()
        one_hot = np.zeros((y.size, domain.n_categories), dtype=np.float64)
        one_hot[np.arange(y.size), y] = 1.0
        return one_hot

    def public_trials_log_likelihood_bound(
        self, domain: RecordDomain, lower: float, smallest: float
    ) -> float:
        return categorical_log_likelihood_bound(lower, domain.n_categories)


class DirichletMultinomial(_DirichletFamily):
    """Dirichlet prior, Multinomial likelihood with at most ``max_trials`` trials per record.

    S(x) = the record's count vector; ||S(x)||_1 = its number of trials ≤ max_trials.
    """

    name = "dirichlet-multinomial"
    likelihood = "multinomial"
    pattern = "Multinomial(n, p=p or p[group]) with p ~ Dirichlet"

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

    def public_trials_log_likelihood_bound(
        self, domain: RecordDomain, lower: float, smallest: float
    ) -> float:
        return multinomial_log_likelihood_bound(int(domain.trials), lower, domain.n_categories)


# --- log-likelihood bounds Δ ----------------------------------------------------------------


def categorical_log_likelihood_bound(truncation: float, n_categories: int) -> float:
    """Δ of one categorical record with every probability in [a0, 1 − (K − 1)·a0].

    Δ = log((1 − (K − 1)·a0) / a0) nats: the log of the largest over the smallest probability
    in the truncated simplex (Foulds et al. App. E.1; eq. 15 for K = 2).

    Raises
    ------
    ValueError
        If a0 <= 0 (Δ = ∞), a0 >= 1/K or K < 2.
    """
    if int(n_categories) != n_categories or n_categories < 2:
        raise ValueError(f"need K >= 2 categories, got {n_categories!r}")
    a0 = probability_truncation(truncation, int(n_categories), "categorical")
    return math.log((1 - (n_categories - 1) * a0) / a0)


def multinomial_log_likelihood_bound(n_trials: int, truncation: float, n_categories: int) -> float:
    """Δ of one Multinomial(n, θ) record, θ in the simplex truncated at θ_j >= a0.

    Δ = n·log((1 − (K − 1)·a0)/a0), with c = log h (:mod:`pymc_dp.families.bounds`): the utility
    Σ_j y_j log θ_j of a count vector y with Σ y_j = n lies in [n·log a0, n·log(1 − (K − 1)a0)],
    and both ends are reached (all n trials in the smallest or the largest component, θ at a
    vertex of the truncated simplex), for one shared θ and for grouped records alike. For n = 1
    it is :func:`categorical_log_likelihood_bound`.

    Raises
    ------
    ValueError
        If n < 1 is not an integer, K < 2, or a0 is missing (Δ = ∞) or >= 1/K.
    """
    if int(n_trials) != n_trials or n_trials < 1:
        raise ValueError(f"multinomial: n_trials must be an integer >= 1, got {n_trials!r}")
    return int(n_trials) * categorical_log_likelihood_bound(truncation, n_categories)


# --- tempered update ------------------------------------------------------------------------


def dirichlet_tempered_parameters(
    prior_parameters: tuple[np.ndarray, ...], statistics: np.ndarray, temperature: float
) -> tuple[np.ndarray]:
    """(α',) of Dirichlet(α) × counts n, raised to 1/T: α' = (α − 1 + n)/T + 1.

    Every exponent of the conjugate posterior divided by T (Foulds et al. 2016, §3.1 eq. 14).
    ``statistics`` has shape (G, K); ``prior_parameters`` is (α,), broadcast to (G, K).
    """
    (alpha,) = prior_parameters
    return ((alpha - 1 + statistics) / float(temperature) + 1,)


def dirichlet_tempered_draw(
    parameters: tuple[np.ndarray, ...],
    bounds: tuple[float, float],
    rng: np.random.Generator,
    current: np.ndarray,
) -> np.ndarray:
    """One Fang et al. kernel step from ``current`` (G, K) for the Dirichlet(α') truncated at
    a0 = bounds[0]: K − 1 exact pair updates (:func:`pymc_dp.truncated.truncated_dirichlet_gibbs`).
    """
    return truncated_dirichlet_gibbs(current, parameters[0], bounds[0], rng)
