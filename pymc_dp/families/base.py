"""The interface of a conjugate exponential family, as the private samplers need it.

Vocabulary (after OpenDP): a family defines a *transformation* — per-record sufficient
statistics S(x) and their per-group sums, with a data-independent bound on one record's
contribution — and the conjugate *post-processing* of released statistics. The *measurement*
(noise) lives in :mod:`pymc_dp.mechanisms`.

Each family module owns everything about its family: the statistics, the log-likelihood
bound Δ of its likelihoods (:mod:`pymc_dp.families.bounds` says what Δ is) and the tempered
conditional update (:mod:`pymc_dp.families.tempered` dispatches to it):

* :mod:`~pymc_dp.families.beta` — Beta prior; Bernoulli and Binomial likelihoods;
* :mod:`~pymc_dp.families.dirichlet` — Dirichlet prior; Categorical and Multinomial;
* :mod:`~pymc_dp.families.gamma` — Gamma prior; Poisson;
* :mod:`~pymc_dp.families.normal` — Normal prior; Normal with known σ.

This module holds the interface of the families the Laplace path uses (Beta and Dirichlet),
the helpers they share, and the Δ of records whose number of trials is private (Binomial and
Multinomial alike).

Source: Foulds et al. (UAI 2016), §3.1 eq. (11) (conjugate posterior from aggregate
statistics) and §3.2 eq. (16)–(17) (L1 sensitivity of the aggregate statistics).
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt

from pymc_dp.errors import InvalidPrivateDataError, value_free_repr

__all__ = [
    "ConjugateFamily",
    "RecordDomain",
    "RecordSummary",
    "group_sums",
    "private_trials_log_likelihood_bound",
    "probability_truncation",
    "table_l2_sensitivity",
]


@value_free_repr
@dataclass(frozen=True)
class RecordDomain:
    """Declared, data-independent domain of one record of an observed variable.

    Attributes
    ----------
    n_categories : int
        Number of outcome components d of S(x): 2 for Beta families (success, failure), K for
        Dirichlet families.
    max_trials : int
        Largest number of trials one record may carry (1 for Bernoulli and Categorical).
    trials : int or ndarray or None
        Trials of the likelihood: a public scalar, a per-record array (private data, bounded by
        ``max_trials``), or None for one-trial likelihoods.
    """

    n_categories: int
    max_trials: int = 1
    trials: int | np.ndarray | None = None

    @property
    def trials_public(self) -> bool:
        """True when every record has the same, public, number of trials."""
        return self.trials is None or np.ndim(self.trials) == 0


class ConjugateFamily(ABC):
    """A conjugate prior / likelihood pair whose data enter only through count statistics.

    Subclasses implement validation of records, per-record statistics S(x) (shape (n, d),
    non-negative, with ``||S(x)||_1 <= max_trials``), the log-likelihood as a function of the
    aggregate statistics, and the conjugate posterior draw.
    """

    name: str
    prior: str  # "beta" or "dirichlet"
    likelihood: str
    pattern: str
    """The model the recogniser takes for this family, as refusals list it
    (:data:`pymc_dp.families.LAPLACE_PATTERNS`)."""

    @abstractmethod
    def validate(self, data: np.ndarray, domain: RecordDomain, variable: str) -> None:
        """Raise :class:`~pymc_dp.InvalidPrivateDataError` unless every record is in domain."""

    @abstractmethod
    def record_statistics(self, data: np.ndarray, domain: RecordDomain) -> np.ndarray:
        """Per-record sufficient statistics S(x_i), shape (n, d), float64."""

    @abstractmethod
    def log_likelihood(self, theta: pt.TensorVariable, table: np.ndarray) -> pt.TensorVariable:
        """Σ_g Σ_j table[g, j] · log θ_gj (the data-dependent part of the log-likelihood).

        ``theta`` is the prior variable as it enters the likelihood, shape (G,) for Beta
        families and (G, K) for Dirichlet families; ``table`` has shape (G, d).
        """

    @abstractmethod
    def posterior_parameters(
        self, prior_params: tuple[np.ndarray, ...], table: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """Conjugate posterior parameters given the (G, d) table (eq. 11)."""

    @abstractmethod
    def sample_posterior(
        self, rng: np.random.Generator, posterior_params: tuple[np.ndarray, ...]
    ) -> np.ndarray:
        """One draw from the distribution with ``posterior_params``."""

    def posterior_draw(
        self, rng: np.random.Generator, prior_params: tuple[np.ndarray, ...], table: np.ndarray
    ) -> np.ndarray:
        """One draw from the conjugate posterior given the (G, d) table (eq. 11)."""
        return self.sample_posterior(rng, self.posterior_parameters(prior_params, table))

    def log_likelihood_bound(self, domain: RecordDomain, lower: float, upper: float) -> float:
        """Δ (nats) of one record of ``domain`` with the prior truncated to [lower, upper]
        (for a Dirichlet: every component ≥ ``lower``): the bound the posterior-sampling
        mechanisms calibrate their temperature by (:mod:`pymc_dp.families.bounds`).
        Per-record (private) trials take
        :func:`~pymc_dp.families.base.private_trials_log_likelihood_bound`."""
        smallest = lower if self.prior == "dirichlet" else min(lower, 1 - upper)
        if not domain.trials_public:
            return private_trials_log_likelihood_bound(domain.max_trials, smallest)
        return self.public_trials_log_likelihood_bound(domain, lower, smallest)

    @abstractmethod
    def public_trials_log_likelihood_bound(
        self, domain: RecordDomain, lower: float, smallest: float
    ) -> float:
        """Δ of one record with public trials; ``smallest`` is the least probability the
        truncation allows (min(a₀, 1 − b₀) for a Beta, a₀ for a Dirichlet)."""

    @staticmethod
    def record_l1_bound(domain: RecordDomain) -> float:
        """sup_x ||S(x)||_1: one record's largest contribution (= max trials)."""
        return float(domain.max_trials)

    @staticmethod
    def record_l2_bound(domain: RecordDomain) -> float:
        """sup_x ||S(x)||_2 = max trials: S(x) ≥ 0 has ||S||₂ ≤ ||S||₁ ≤ M, with equality when
        all M trials fall in one component (S = M·e_j).

        The L2 sensitivity of a released table follows
        (:func:`~pymc_dp.families.base.table_l2_sensitivity`)."""
        return float(domain.max_trials)


def table_l2_sensitivity(record_bound: float, neighbouring: str, one_component: bool) -> float:
    """Data-independent L2 sensitivity of a released (G, d) table of per-group sums of S(x).

    C = ``record_bound`` = sup_x ||S(x)||₂ (:meth:`ConjugateFamily.record_l2_bound`); every
    S(x) is non-negative.

    * ``"add-remove-one"``: one row changes by S(x): Δ₂ = C (a histogram: 1).
    * ``"replace-one"``, full table: S(x) leaves one row and S(x') enters one row. In
      different rows the change is ||(S(x), S(x'))||₂ ≤ √2·C; in the same row
      ||S(x') − S(x)||₂² = ||S(x)||² + ||S(x')||² − 2 S(x)·S(x') ≤ 2C² since S(x)·S(x') ≥ 0.
      Δ₂ = √2·C, reached by a record moving all its trials to another component (counts: √2).
    * ``"replace-one"``, one released component (one group, d = 2, public trials; the second
      component is total − first): it moves by at most C: Δ₂ = C.

    Raises
    ------
    ValueError
        For an unknown neighbouring relation.
    """
    if neighbouring == "add-remove-one" or (neighbouring == "replace-one" and one_component):
        return float(record_bound)
    if neighbouring == "replace-one":
        return math.sqrt(2.0) * float(record_bound)
    raise ValueError(f"unknown neighbouring relation {neighbouring!r}")


def group_sums(record_stats: np.ndarray, groups: np.ndarray | None, n_groups: int) -> np.ndarray:
    """Sum per-record statistics within groups: (n, d) → (n_groups, d), float64."""
    n_stats = record_stats.shape[1]
    if groups is None:
        return record_stats.sum(axis=0, keepdims=True).astype(np.float64)
    table = np.empty((n_groups, n_stats), dtype=np.float64)
    for j in range(n_stats):
        table[:, j] = np.bincount(groups, weights=record_stats[:, j], minlength=n_groups)
    return table


def is_integer(value) -> bool:
    """True for an integer that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def require_integers(data: np.ndarray, variable: str, what: str = "values") -> np.ndarray:
    """Return ``data`` as int64 or raise if it holds NaN, infinities or fractions."""
    array = np.asarray(data)
    if array.dtype.kind in "biu":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind != "f":
        raise InvalidPrivateDataError(f"{variable}: {what} must be numeric, got {array.dtype}")
    if np.isnan(array).any():
        raise InvalidPrivateDataError(
            f"{variable}: {what} contain NaN; private data must be complete (pymc_dp never "
            "imputes private records). Nothing was released."
        )
    if not np.isfinite(array).all() or (array != np.round(array)).any():
        raise InvalidPrivateDataError(f"{variable}: {what} must be finite whole numbers")
    return array.astype(np.int64)


def reject_out_of_range(
    values: np.ndarray, low: int, high: int | np.ndarray, variable: str, what: str
) -> None:
    """Raise naming ``variable`` if any value lies outside [low, high].

    The message gives how many values are out of bounds, never the values: an error message
    may end up in a log, and the values are private.
    """
    bad = (values < low) | (values > high)
    if bad.any():
        raise InvalidPrivateDataError(
            f"{variable}: {int(bad.sum())} {what} outside the declared domain "
            f"[{low}, {'per-record trials' if np.ndim(high) else high}]. Nothing was released."
        )


@value_free_repr
@dataclass(frozen=True, eq=False)
class RecordSummary:
    """The exact statistics of records that live outside the model (a Dask collection),
    computed and validated in one pass where the records are (:mod:`pymc_dp.records`).
    **Private**: the same numbers an in-memory link computes from its arrays, before noise.

    Attributes
    ----------
    statistics : ndarray of float64, shape (G, D)
        The link's exact per-group statistics (a conjugate link's table of sums of S(x); a
        bounded link's sums of t(x) on the unit scale).
    n_records : int
        Number of records n.
    partitions : int
        Number of partitions the pass read (public: it is how the data are stored).
    """

    statistics: np.ndarray
    n_records: int
    partitions: int


@value_free_repr
@dataclass(frozen=True, eq=False)
class ConjugateLink:
    """An observed variable of a conjugate family, with its private records.

    Found by :func:`pymc_dp.analysis.conjugate.find_conjugate_link`; released by
    :mod:`pymc_dp.mechanisms.statistics`.

    Attributes
    ----------
    observed, prior : str
        Names of the observed variable and of its Beta/Dirichlet parent.
    family : ConjugateFamily
        The conjugate pair.
    data : ndarray
        The observed (private) records.
    groups : ndarray of int or None
        Group label of each record (private), or None for one group.
    n_groups : int
        Number of groups G (the prior's leading dimension; 1 without indexing).
    domain : RecordDomain
        Declared domain of one record.
    truncation : (float, float) or None
        Bounds (lower, upper) of a truncated Beta prior (``pm.Truncated`` /
        :func:`pymc_dp.distributions.TruncatedBeta`), else None.
    summary : RecordSummary or None
        The validated exact statistics when the records live in a Dask collection (then
        ``data`` and ``groups`` are handles on it, :class:`pymc_dp.records.DaskRecords`).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> link.observed, link.prior, link.n_groups
    ('y', 'p', 1)
    >>> pymc_dp.sufficient_statistics(link).shape  # one row per group: (successes, failures)
    (1, 2)
    """

    observed: str
    prior: str
    family: ConjugateFamily
    data: np.ndarray
    groups: np.ndarray | None
    n_groups: int
    domain: RecordDomain
    truncation: tuple[float, float] | None = None
    summary: RecordSummary | None = None

    def statistics(self) -> np.ndarray:
        """Exact per-group sums of S(x), shape (G, d), float64. **Private.**

        Validates the records first (an in-memory link); a summarised link returns the
        statistics its one pass computed and validated.
        """
        if self.summary is not None:
            return self.summary.statistics.copy()
        self.validate()
        stats = self.family.record_statistics(self.data, self.domain)
        groups = None if self.groups is None else np.asarray(self.groups, dtype=np.int64)
        return group_sums(stats, groups, self.n_groups)

    def validate(self) -> None:
        """Raise :class:`~pymc_dp.InvalidPrivateDataError` if any record is out of domain.

        A summarised link (records in a Dask collection) was validated by the pass that
        computed its summary; without one, its records cannot be read here.
        """
        if self.summary is not None:
            return
        require_in_memory(self.data, self.observed)
        self.family.validate(self.data, self.domain, self.observed)
        if self.groups is not None:
            groups = require_integers(self.groups, self.observed, "group labels")
            reject_out_of_range(groups, 0, self.n_groups - 1, self.observed, "group labels")
            n_records = self.data.shape[0] if self.data.ndim else 1
            if groups.shape != (n_records,):
                raise InvalidPrivateDataError(
                    f"{self.observed}: {groups.shape[0]} group labels for {n_records} records"
                )


def require_in_memory(data, variable: str) -> None:
    """Raise ``TypeError`` for records that live outside memory and were not summarised.

    Dask-backed records (:class:`pymc_dp.records.DaskRecords`) are read only by the one pass
    of :func:`pymc_dp.records.summarise` (``pymc_dp.sample`` runs it when it validates).
    """
    if getattr(data, "is_dask_records", False):
        raise TypeError(
            f"{variable}: its records live in a Dask collection; they are validated and "
            "summarised in one pass by pymc_dp.records.summarise (pymc_dp.sample does this), "
            "never read record by record here. Nothing was released."
        )


def probability_truncation(truncation: float, n_categories: int, family: str) -> float:
    """Return a0 if 0 < a0 < 1/K (every probability of K in [a0, 1 − (K − 1)·a0]), else raise.

    Raises
    ------
    ValueError
        If a0 is not finite and > 0 (an untruncated simplex has Δ = ∞) or a0 >= 1/K; the
        message starts with ``family``.
    """
    a0 = float(truncation)
    if not math.isfinite(a0) or a0 <= 0:
        raise ValueError(
            f"{family}: Δ is infinite without a truncation of the probabilities; give "
            f"truncation a0 > 0 (each probability >= a0), got {truncation!r}"
        )
    if a0 * n_categories >= 1:
        raise ValueError(f"{family}: truncation a0 must be < 1/{n_categories}, got {a0}")
    return a0


def private_trials_log_likelihood_bound(max_trials: int, smallest_probability: float) -> float:
    """Δ of one Binomial/Multinomial record whose number of trials m ∈ 0..M is private.

    With h kept, log Pr(y | m, θ) = log h(y) + Σ_j y_j log θ_j lies in [M·log θ_min, 0]: 0 for
    a record with no trials, M·log θ_min for M trials all in the least likely outcome. Both are
    reached, so Δ = M·log(1/θ_min) nats, with θ_min the smallest probability of the truncated
    parameter space (a0, or min(lower, 1 − upper) for a truncated Beta). Grouped records give
    the same range (Foulds et al. 2016, eq. 9 and 13; :mod:`pymc_dp.families.bounds`).

    Raises
    ------
    ValueError
        If M < 1 is not an integer, or θ_min is not in (0, 1/2] (Δ = ∞ without truncation).
    """
    if int(max_trials) != max_trials or max_trials < 1:
        raise ValueError(f"max_trials must be an integer >= 1, got {max_trials!r}")
    if not 0 < smallest_probability <= 0.5:
        raise ValueError(
            "Δ is infinite without a truncation of the probabilities; the smallest probability "
            f"must lie in (0, 1/2], got {smallest_probability!r}"
        )
    return int(max_trials) * math.log(1 / smallest_probability)
