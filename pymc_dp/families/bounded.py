"""Families with declared, data-independent record bounds, for the Laplace statistics.

The Beta/Dirichlet count families (:mod:`~pymc_dp.families.beta`,
:mod:`~pymc_dp.families.dirichlet`) have bounded statistics by construction. Poisson counts,
Normal values and regression covariates need a declared range ``data_bounds`` (chosen without
looking at the data). This module holds what those families share:

* :class:`BoundedStructure` — the public structure of one observed likelihood (its declared
  bounds, the parameter graphs its likelihood reads, its groups), found by the family's own
  :meth:`BoundedFamily.recognise` (the recogniser, :mod:`pymc_dp.analysis.bounded`, loops
  over :data:`pymc_dp.families.BOUNDED_FAMILIES`);
* :class:`Declarations` and :class:`BoundedFound` — what a family's recognition reads
  besides the model (the run's ``data_bounds``, ``clamp_to_bounds``, ``covariate_bins``) and
  what it returns;
* :class:`BoundedLink` — the structure with the private records;
* :class:`BoundedFamily` — the interface each family implements: per-group statistics on the
  unit scale, which components are released and their L1 sensitivity, the projection of a
  release, and the two readings of a release in the private model (plug-in and noise-aware);
* the record checks (finite, inside the declared bounds or clamped on opt-in) and the Laplace
  noise as a scale mixture of normals, which the noise-aware readings share.

Families: :mod:`~pymc_dp.families.poisson` (Poisson counts),
:mod:`~pymc_dp.families.normal` (Normal with unknown mean and sd) and
:mod:`~pymc_dp.families.regression` (linear regression).

Laplace noise as a scale mixture (Andrews & Mallows 1974; used for private statistics by
Bernstein & Sheldon, NeurIPS 2019, §4): e ~ Laplace(0, b) is e | V ~ N(0, V) with
V ~ Exponential(rate 1/(2b²)) (mean 2b²). A Gaussian (CLT) law of the true statistics then
leaves a Gaussian law of the release given V, so the true statistics integrate out in closed
form and NUTS samples V alongside the parameters (the regression). With two released
components V integrates out too
(:func:`pymc_dp.families.second_moments.two_component_laplace_log_likelihood`,
the Normal family).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError, value_free_repr
from pymc_dp.families.base import (
    RecordSummary,
    reject_out_of_range,
    require_in_memory,
    require_integers,
)

__all__ = [
    "GAUSS_LEGENDRE_NODES",
    "LATENT_STEMS",
    "MAX_COVARIATE_BINS",
    "BoundedFamily",
    "BoundedFound",
    "BoundedLink",
    "BoundedStructure",
    "CovariateBins",
    "Declarations",
    "cell_index",
    "check_bounded_values",
    "check_group_labels",
    "declared_bounds",
    "laplace_noise_variance",
    "latent_record_count",
    "positive_counts",
    "record_cells",
    "record_count_initial_offset",
    "record_count_marginal",
    "record_count_nodes",
    "refuse_latent_name_clash",
    "tempered_record_bounds",
    "to_unit_interval",
]

MAX_COVARIATE_BINS = 1_000
"""Most bins (or whole-number levels) one covariate column may be read at (public)."""
GAUSS_LEGENDRE_NODES = 2
"""Quadrature nodes per binned column and bin (exact for cubics in the covariate)."""


@value_free_repr
@dataclass(frozen=True, eq=False)
class CovariateBins:
    """How a per-record covariate is read per cell: public bins of its declared range.

    Each column is either cut into ``bins`` equal bins of its declared range [low, high]
    (a record falls in bin ⌊(x − low)/w⌋, w = (high − low)/bins, x = high in the last one),
    or read at its whole-number ``levels`` low, low + 1, …, high (exactly, for counts and
    0/1 indicators). Records that share their labels and their bins share a cell, and the
    likelihood's parameter in that cell is its average over the bin:
    Gauss–Legendre quadrature with :data:`GAUSS_LEGENDRE_NODES` nodes per binned column,
    the covariate taken as uniform within the bin (exact for a parameter cubic in x there).
    Nothing here is private: the bounds and the bins are declared.

    Attributes
    ----------
    key : str
        The ``data_bounds`` key (the ``pm.Data`` name, or ``"<observed>_covariates"``).
    low, high : ndarray, shape (d,)
        Declared range of every column.
    bins : ndarray of int, shape (d,)
        Cells along every column (bins, or levels high − low + 1).
    levels : ndarray of bool, shape (d,)
        Whether the column is read at its whole-number levels.
    """

    key: str
    low: np.ndarray
    high: np.ndarray
    bins: np.ndarray
    levels: np.ndarray

    @property
    def n_columns(self) -> int:
        return int(self.low.size)

    def points(self, column: int) -> tuple[np.ndarray, np.ndarray]:
        """Where column ``column`` is evaluated in each of its bins, (bins, q), with the
        quadrature weights (q,) (one node of weight 1 for levels)."""
        low, high, bins = self.low[column], self.high[column], int(self.bins[column])
        if self.levels[column]:
            return (low + np.arange(bins, dtype=np.float64))[:, None], np.ones(1)
        nodes, weights = np.polynomial.legendre.leggauss(GAUSS_LEGENDRE_NODES)
        width = (high - low) / bins
        centres = low + width * (np.arange(bins) + 0.5)
        return centres[:, None] + 0.5 * width * nodes[None, :], weights / 2.0

    def index(self, values: np.ndarray, observed: str, clamp: bool) -> np.ndarray:
        """The bin of every record (n, d), from its covariates (n, d). **Private.**

        Raises
        ------
        InvalidPrivateDataError
            For NaN or infinite values, values outside the declared range (unless clamped)
            and fractional values of a column read at its levels; counts only.
        """
        values = check_bounded_values(
            values, self.low, self.high, self.key, "covariate values", clamp
        )
        index = np.empty(values.shape, dtype=np.int64)
        for j in range(self.n_columns):
            column = values[:, j] - self.low[j]
            if self.levels[j]:
                index[:, j] = require_integers(column, self.key, "covariate levels")
            else:
                width = (self.high[j] - self.low[j]) / self.bins[j]
                index[:, j] = np.clip(np.floor(column / width), 0, self.bins[j] - 1)
        return index

    def describe(self) -> str:
        """The bounds and bins in words (for the ledger)."""
        parts = []
        for j in range(self.n_columns):
            read = "levels" if self.levels[j] else "bins"
            parts.append(f"[{self.low[j]:g}, {self.high[j]:g}] in {int(self.bins[j])} {read}")
        where = f"{self.key}" if self.n_columns == 1 else f"{self.key} columns"
        return f"{where} {'; '.join(parts)}"


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedStructure:
    """The public structure of one observed likelihood with declared bounds.

    Nothing here is private: the bounds are declared, the parameter graphs are the model's
    definition, the number of groups is the parameter's shape.

    Attributes
    ----------
    observed : str
        Name of the observed variable.
    family : BoundedFamily
    bounds : (float, float)
        Declared range [low, high] of every observed value.
    parameters : dict
        Role → graph of the source model the likelihood reads (Poisson: ``"rate"``, shape
        () or (G,); Normal: ``"mu"``, ``"sigma"``; regression: ``"beta"`` (p,), ``"alpha"``
        (absent without an intercept), ``"sigma"``). None of them reads a record.
    n_groups : int
        G: rows of the statistics (1 unless a Poisson rate is indexed by group labels).
    grouped : bool
        Whether records choose their parameter by a (private) group label, G > 1.
    group_variable : str
        Name of the model variable whose first dimension labels the groups ("" if none).
    covariates : str or None
        ``data_bounds`` key of the regression covariates (the ``pm.Data`` name of X).
    covariate_bounds : (ndarray, ndarray) or None
        Declared per-column range (low (p,), high (p,)) of the covariates.
    clamp : frozenset of str
        ``data_bounds`` keys (observed name, covariates key) whose records are clamped into
        their declared range instead of refused (``pymc_dp.sample(clamp_to_bounds=...)``).
    likelihood : str
        The cell-count family's likelihood (``"bernoulli"``, ``"binomial"``,
        ``"categorical"``; "" for the other families).
    n_categories : int
        K: outcomes per record of a cell-count likelihood (2 for Bernoulli and Binomial).
    label_sizes : tuple of int
        G₁, G₂, …: the values each group-label array takes, then the bins of every binned
        covariate column (likelihoods read per cell; their product is ``n_groups``).
    labels : tuple of str
        Names of the group-label arrays the likelihood reads (a ``pm.Data`` container's
        name, ``<observed>_group_labels`` for a constant array): public names of private
        arrays, recorded in the release's ledger event.
    covariate_bins : tuple of CovariateBins
        Per-record covariates read per cell, in the order of their columns in
        ``BoundedLink.covariates`` (likelihoods read per cell).
    """

    observed: str
    family: BoundedFamily
    bounds: tuple[float, float]
    parameters: Mapping[str, Variable]
    n_groups: int = 1
    grouped: bool = False
    group_variable: str = ""
    covariates: str | None = None
    covariate_bounds: tuple[np.ndarray, np.ndarray] | None = None
    clamp: frozenset[str] = field(default_factory=frozenset)
    likelihood: str = ""
    n_categories: int = 0
    label_sizes: tuple[int, ...] = ()
    covariate_bins: tuple[CovariateBins, ...] = ()
    labels: tuple[str, ...] = ()

    @property
    def n_covariates(self) -> int:
        return 0 if self.covariate_bounds is None else int(self.covariate_bounds[0].size)

    def describe_bounds(self) -> str:
        """The declared bounds in words (values rescaled to [0, 1] by them)."""
        text = f"{self.observed} in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        if self.covariate_bounds is not None:
            low, high = self.covariate_bounds
            text += f"; {self.covariates} in [{_numbers(low)}, {_numbers(high)}] per column"
        for binned in self.covariate_bins:
            text += f"; {binned.describe()}"
        return text

    def clamping(self) -> str:
        """The clamping opt-in in words, for the ledger ("" when nothing is clamped)."""
        parts = []
        if self.observed in self.clamp:
            parts.append(f"{self.observed} to [{self.bounds[0]:g}, {self.bounds[1]:g}]")
        if self.covariates is not None and self.covariates in self.clamp:
            low, high = self.covariate_bounds
            parts.append(f"{self.covariates} to [{_numbers(low)}, {_numbers(high)}] per column")
        for binned in self.covariate_bins:
            if binned.key in self.clamp:
                low, high = binned.low, binned.high
                parts.append(f"{binned.key} to [{_numbers(low)}, {_numbers(high)}] per column")
        return "; ".join(parts)


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedLink:
    """A bounded likelihood with its private records.

    Attributes
    ----------
    structure : BoundedStructure
    data : ndarray, shape (n,)
        The observed values. **Private.**
    covariates : ndarray, shape (n, p), or None
        The regression covariates. **Private.**
    groups : ndarray of int, shape (n,), or None
        Group labels. **Private.**
    summary : RecordSummary or None
        The validated exact statistics when the records live in a Dask collection (then
        ``data``, ``covariates`` and ``groups`` are handles on it,
        :class:`pymc_dp.records.DaskRecords`).
    """

    structure: BoundedStructure
    data: np.ndarray
    covariates: np.ndarray | None = None
    groups: np.ndarray | None = None
    summary: RecordSummary | None = None

    @property
    def observed(self) -> str:
        return self.structure.observed

    @property
    def family(self) -> BoundedFamily:
        return self.structure.family

    @property
    def n_records(self) -> int:
        """Number of records n (public under replace-one). **Read from private data.**"""
        if self.summary is not None:
            return int(self.summary.n_records)
        require_in_memory(self.data, self.observed)
        return int(np.asarray(self.data).size)

    def statistics(self) -> np.ndarray:
        """Exact per-group sums of t(x) on the unit scale, shape (G, D). **Private.**

        Validates (and, on opt-in, clamps) the records of an in-memory link; a summarised
        link returns the statistics its one pass computed and validated.
        """
        if self.summary is not None:
            return self.summary.statistics.copy()
        require_in_memory(self.data, self.observed)
        return self.family.statistics(self)

    def validate(self) -> None:
        """Raise :class:`~pymc_dp.InvalidPrivateDataError` unless every record is usable."""
        if self.summary is not None:
            return
        require_in_memory(self.data, self.observed)
        self.family.records(self)


@value_free_repr
@dataclass(frozen=True)
class Declarations:
    """What the user declared about the records, as a family's recognition reads it.

    Attributes
    ----------
    data_bounds : dict
        Every declared bound of the run (``{key: (low, high)}``).
    clamp : frozenset of str
        ``data_bounds`` keys whose records are clamped into their bounds (opt-in).
    covariate_bins : dict
        ``{covariates key: bins}`` for per-record covariates read per cell
        (:func:`pymc_dp.families.recognition.covariate_bins_of`).
    """

    data_bounds: Mapping[str, object] = field(default_factory=dict)
    clamp: frozenset[str] = frozenset()
    covariate_bins: Mapping[str, object] = field(default_factory=dict)


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedFound:
    """A recognised bounded likelihood: its link and the graph inputs it claims.

    Attributes
    ----------
    link : BoundedLink
        Structure and (not yet validated) private records.
    claims : tuple of Variable
        Graph inputs beyond its records that only this likelihood may read (group labels,
        covariates: :func:`pymc_dp.analysis.inputs.refuse_private_reads`).
    keys : tuple of str
        The ``data_bounds`` keys it reads (observed name, covariates keys).
    """

    link: BoundedLink
    claims: tuple[Variable, ...]
    keys: tuple[str, ...]


class BoundedFamily(ABC):
    """A likelihood whose released statistics are bounded by declared record bounds.

    Statistics are per-group sums of a per-record vector t(x) whose components have
    declared, data-independent ranges (records are rescaled by their declared bounds first);
    component 0 is the record count (t₀ = 1). The released entries may carry public
    weights (:meth:`weights`). Every method that sees records is marked private; everything
    else reads the structure or released values only.
    """

    name: str
    likelihood: str
    pattern: str
    """The model the recogniser takes for this family, as refusals list it
    (:data:`pymc_dp.families.LAPLACE_PATTERNS`)."""
    source: str
    """Paper, section and equation of the family's release, as the ledger records it
    (the ``source`` of every ledger event)."""
    noise_aware_sampler: ClassVar[Mapping[str, object]] = {}
    """NUTS options (``target_accept``, ``init``) the noise-aware model samples well with;
    the Laplace route uses them unless the caller chose its own."""
    compiles_to_jax: ClassVar[bool] = False
    """Whether every private model of this family (plug-in and noise-aware, Laplace and
    Gaussian noise, both neighbouring relations) compiles to JAX, so that
    ``nuts_sampler="blackjax"`` can sample it (:mod:`pymc_dp.routes.blackjax_nuts`). Checked
    before the release: a family whose log density has a shape read from the release (the
    Poisson's window of counts, the cells' latent counts) cannot be compiled by JAX, and the
    run would fail after its release."""

    @abstractmethod
    def claims(self, model: pm.Model, rv: Variable) -> bool:
        """True when ``rv`` (an observed variable of ``model``) is this family's to recognise
        or to refuse with its own reason. Reads the graph only (no array value); at most one
        registered family claims a variable."""

    @abstractmethod
    def recognise(self, model: pm.Model, rv: Variable, declarations: Declarations) -> BoundedFound:
        """The link of a claimed likelihood, or a refusal before any release.

        Finds the parameter graphs the likelihood reads, the records (read as is:
        :func:`pymc_dp.graph.reading.require_as_is`), labels and covariates, and the
        declared bounds they need.

        Raises
        ------
        NonPrivateModelError
            For a shape this family does not take, a parameter that reads the records, or a
            missing bound (naming the variable and the bound to declare).
        ValueError
            For an invalid bound.
        """

    def initial_values(self, release) -> dict[str, np.ndarray]:
        """Starting values of the noise-aware model's latent variables where its default
        start would be outside their support (read from the release: public). None here."""
        return {}

    @abstractmethod
    def records(self, link: BoundedLink) -> tuple[np.ndarray, ...]:
        """The validated (and, on opt-in, clamped) records. Private.

        Raises
        ------
        InvalidPrivateDataError
            Naming the variable and how many values are bad, never the values.
        """

    @abstractmethod
    def statistics(self, link: BoundedLink) -> np.ndarray:
        """Exact per-group sums of t(x) on the unit scale, shape (G, D). Private."""

    @abstractmethod
    def component_names(self, structure: BoundedStructure) -> list[str]:
        """Names of the D components of one group's statistics ("n" first)."""

    @abstractmethod
    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        """Indices of the components released per group (n is left out when public)."""

    @abstractmethod
    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """Data-independent L1 sensitivity of the released, weighted (G, r) array."""

    @abstractmethod
    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """Data-independent L2 sensitivity of the released, weighted (G, r) array."""

    def weights(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        """Public weights c (D,): the release is c_j T_j + noise for each released entry j.

        One noise scale b for the weighted vector puts noise b/c_j on T_j, so the weights
        split ε between the entries (:mod:`pymc_dp.families.second_moments`); the
        sensitivities are those of the weighted vector. All ones (no split) by default.
        """
        return np.ones(len(self.component_names(structure)))

    @abstractmethod
    def project(
        self, full: np.ndarray, structure: BoundedStructure, scale: float, neighbouring: str
    ) -> np.ndarray:
        """Feasible statistics (G, D) closest to the noisy, un-weighted ones (post-processing);
        ``scale`` is the release's noise scale b (of the weighted vector)."""

    @abstractmethod
    def plugin_log_likelihood(
        self, parameters: Mapping[str, Variable], table: Variable, structure: BoundedStructure
    ) -> Variable:
        """The likelihood of the records as a function of the projected statistics."""

    @abstractmethod
    def noise_aware_log_likelihood(
        self,
        parameters: Mapping[str, Variable],
        released: Variable,
        scale: Variable,
        public_n: Variable | None,
        structure: BoundedStructure,
        neighbouring: str,
        noise: str = "laplace",
    ) -> Variable:
        """Log density of the release given the parameters (and latent variables it creates
        in the model in context), the true statistics integrated out.

        ``noise`` is the release's noise: ``"laplace"`` (scale b) or ``"gaussian"`` (standard
        deviation σ = ``scale``, known: the release given the true statistics T is exactly
        Normal(T, σ²I), no latent noise variances)."""

    @abstractmethod
    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        """The released statistic in words, for the ledger."""

    def public_n(self, link: BoundedLink, neighbouring: str) -> np.ndarray | None:
        """Per-group record counts when they are public (one group, replace-one), else None."""
        if neighbouring == "replace-one" and not link.structure.grouped:
            return np.array([float(link.n_records)])
        return None


# --- records -----------------------------------------------------------------------------


def declared_bounds(bounds, name: str, what: str, width: int | None = None):
    """(low, high) of a ``data_bounds`` entry: floats, or arrays of ``width`` per column.

    Raises
    ------
    ValueError
        If a bound is not finite, low >= high, a bound or the range exceeds
        ``LARGEST_BOUND`` in magnitude, or the per-column shapes do not match.
    """
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise ValueError(
            f"data_bounds[{name!r}] must be a pair (low, high) for its {what}, got {bounds!r}"
        ) from None
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    if width is None:
        if low.ndim or high.ndim:
            raise ValueError(f"data_bounds[{name!r}] must be two numbers, got {bounds!r}")
    else:
        if any(b.ndim > 1 or b.size not in (1, width) for b in (low, high)):
            raise ValueError(
                f"data_bounds[{name!r}] must give one (low, high) or one per column ({width}), "
                f"got shapes {low.shape} and {high.shape}"
            )
        low, high = np.broadcast_to(low, (width,)).copy(), np.broadcast_to(high, (width,)).copy()
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low < high)):
        raise ValueError(
            f"data_bounds[{name!r}] must be finite with low < high for its {what}, got {bounds!r}"
        )
    largest = float(np.max(np.maximum(np.abs(low), np.abs(high - low))))
    if largest > LARGEST_BOUND:
        raise ValueError(
            f"data_bounds[{name!r}] reach {largest:.3g} for its {what}: the private model's "
            "log-density squares them (Σx², σ relative to the range) and sums over the "
            f"records, which overflows float64 beyond {LARGEST_BOUND:.0e}, so the sampler "
            "could not start after the release had been charged. Rescale the data (declare "
            "its bounds in other units). Nothing was released."
        )
    return (float(low), float(high)) if width is None else (low, high)


def tempered_record_bounds(name: str, bounds, what: str) -> tuple[float, float]:
    """The declared (low, high) of one likelihood's records on the posterior-sampling
    routes, where they set the log-likelihood bound Δ.

    Raises
    ------
    NonPrivateModelError
        If nothing is declared (Δ would be infinite).
    ValueError
        For bounds :func:`declared_bounds` refuses.
    """
    if bounds is None:
        raise NonPrivateModelError(
            f"{name}: Δ is infinite for unbounded {what}; declare data_bounds={{'{name}': "
            "(low, high)}, chosen without looking at the data"
        )
    low, high = (float(b) for b in bounds)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"{name}: data_bounds must be finite with low < high, got {bounds!r}")
    return declared_bounds((low, high), name, what)


LARGEST_BOUND = 1e150
"""Largest |bound| and range a ``data_bounds`` entry may have (public, checked before any
release). The private model computes squares of bound-scaled quantities summed over the
records and their noise; 1e150² = 1e300 leaves a factor of ~1e8 below float64's largest
number (1.8e308) for the sums. A check on public bounds, not a proof that every model starts:
a failure after the release raises :class:`~pymc_dp.ReleasedRunFailedError`."""


def check_bounded_values(
    values: np.ndarray, low, high, variable: str, what: str, clamp: bool
) -> np.ndarray:
    """Finite values inside [low, high] (broadcast per column), clamped into it on opt-in.

    Non-finite values are always refused: clamping an infinity or a NaN would invent a record.

    Raises
    ------
    InvalidPrivateDataError
        If a value is NaN or infinite, or outside the bounds without ``clamp``; the message
        gives counts only.
    """
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise InvalidPrivateDataError(
            f"{variable}: {int(bad.sum())} {what} are NaN or infinite; private records must be "
            "complete and finite (pymc_dp never imputes or clamps them). Nothing was released."
        )
    if clamp:
        return np.clip(values, low, high)
    outside = (values < low) | (values > high)
    if outside.any():
        raise InvalidPrivateDataError(
            f"{variable}: {int(outside.sum())} {what} outside the declared data_bounds. "
            "Fix the bounds (chosen without looking at the data) or opt in to "
            f"clamp_to_bounds=[{variable!r}]. Nothing was released."
        )
    return values


def check_group_labels(link: BoundedLink) -> np.ndarray | None:
    """Validated group labels (integers in 0..G − 1, one per record), or None."""
    structure = link.structure
    if link.groups is None and not structure.covariate_bins:
        return None
    if structure.label_sizes:  # several label arrays (or one through a link): one per cell
        return record_cells(link)
    groups = require_integers(np.asarray(link.groups).reshape(-1), link.observed, "group labels")
    reject_out_of_range(groups, 0, structure.n_groups - 1, link.observed, "group labels")
    n_records = np.asarray(link.data).size
    if groups.shape != (n_records,):
        raise InvalidPrivateDataError(
            f"{link.observed}: {groups.size} group labels for {n_records} records"
        )
    return groups


def record_cells(link: BoundedLink) -> np.ndarray:
    """The cell of every record of a likelihood read per cell (n,), from its group labels
    and the bins of its covariates, each checked before they are combined. **Private.**

    Raises
    ------
    InvalidPrivateDataError
        For labels out of range or not whole numbers, covariates outside their declared
        range (unless clamped), non-finite covariates, or a number of labels or covariate
        rows other than the number of records; counts only.
    """
    structure = link.structure
    n_records = np.asarray(link.data).size
    columns = []
    if link.groups is not None:
        labels = np.asarray(link.groups)
        columns.append(labels[:, None] if labels.ndim == 1 else labels)
    if structure.covariate_bins:
        covariates = np.asarray(link.covariates)
        start = 0
        for binned in structure.covariate_bins:
            part = covariates[:, start : start + binned.n_columns]
            clamp = binned.key in structure.clamp
            columns.append(binned.index(part, structure.observed, clamp))
            start += binned.n_columns
    for column in columns:
        if column.shape[0] != n_records:
            raise InvalidPrivateDataError(
                f"{link.observed}: {column.shape[0]} group labels or covariate rows for "
                f"{n_records} records"
            )
    return cell_index(np.column_stack(columns), structure.label_sizes, link.observed)


def cell_index(labels: np.ndarray, sizes: tuple[int, ...], observed: str) -> np.ndarray:
    """The cell of every record from its labels (n, k), each checked in 0..G_k − 1 before
    they are combined (an out-of-range label never aliases into another cell). Private.

    Raises
    ------
    InvalidPrivateDataError
        Naming the variable and how many labels are bad (never the labels).
    """
    labels = np.asarray(labels)
    if labels.ndim == 1:
        labels = labels[:, None]
    columns = []
    for j, size in enumerate(sizes):
        column = require_integers(labels[:, j], observed, "group labels")
        reject_out_of_range(column, 0, size - 1, observed, "group labels")
        columns.append(column)
    return np.ravel_multi_index(tuple(columns), sizes)


def to_unit_interval(values: np.ndarray, low, high) -> np.ndarray:
    """(x − low)/(high − low): values in [low, high] to [0, 1] (per column when arrays)."""
    return (np.asarray(values, dtype=np.float64) - low) / (np.asarray(high) - np.asarray(low))


# --- the noise-aware pieces every family shares -------------------------------------------


LATENT_STEMS = ("n_records", "noise_variance", "covariate_", "cell_log_size")
"""Stems of the latent variables the noise-aware private models add, named
``<observed>_<stem>…`` (:func:`latent_record_count`, :func:`laplace_noise_variance`, the
regression's covariate model, the cells' sizes)."""


def refuse_latent_name_clash(model: pm.Model, observed: str) -> None:
    """Refuse, before any release, a model variable named like a latent variable the private
    model of ``observed`` may add (:data:`LATENT_STEMS`): the private model could not be
    built after the release had been charged.

    Raises
    ------
    NonPrivateModelError
        Naming the variable (a model's names are public).
    """
    prefixes = tuple(f"{observed}_{stem}" for stem in LATENT_STEMS)
    clashes = sorted(name for name in model.named_vars if name.startswith(prefixes))
    if clashes:
        raise NonPrivateModelError(
            f"{observed}: the model has variable(s) {clashes} named like the latent variables "
            f"the private model adds for {observed!r} (names starting "
            f"{', '.join(repr(p) for p in prefixes)}); rename them. Nothing was released."
        )


def laplace_noise_variance(name: str, scale: Variable, shape: int) -> Variable:
    """Latent variances V ~ Exponential(mean 2b²) of Laplace(b) noise as a normal mixture.

    Creates the free variable ``<name>_noise_variance`` (shape ``shape``) in the model in
    context. Laplace(0, b) = N(0, V) with V ~ Exponential(rate 1/(2b²)).
    """
    return pm.Exponential(f"{name}_noise_variance", scale=2.0 * scale**2, shape=shape)


def latent_record_count(
    name: str, released_n: Variable, scale: Variable, groups: int, noise: str = "laplace"
):
    """Latent (private) record counts n_g, flat prior on n_g > 0, from their noisy release.

    The count is released as r = n + Laplace(b) (``noise="gaussian"``: r = n + N(0, σ²),
    σ = ``scale``), so with a flat prior on n > 0 its posterior is the noise density at
    r − n on n > 0, times the rest of the likelihood. It is sampled through the free variable
    ``<name>_n_records_offset`` (G,), u, with

        n = b · softplus(u + r/b)        (the Deterministic ``<name>_n_records``)

    and the density of u the noise density at r − n times the Jacobian
    dn/du = b · sigmoid(u + r/b) (the Potential ``<name>_n_records_release``): a flat prior
    on n > 0, exactly. Where r ≫ b this is n = r + b·u, non-centred, so u has the same scale
    whatever b (at ε = 10⁶ a centred n would need steps of 10⁻⁶); near and below 0 the map
    bends smoothly and keeps n > 0. (The offset was Laplace(0, 1) with n = r + b·u and n ≤ 0
    rejected: a wall at n = 0 that NUTS diverged against in empty cells.) Both are created in
    the model in context. The count is treated as continuous (its spread is that of the
    noise, which dwarfs the rounding).
    """
    shift = released_n / scale
    offset = pm.Flat(f"{name}_n_records_offset", shape=(groups,))
    argument = offset + shift
    n = pm.Deterministic(f"{name}_n_records", scale * pt.softplus(argument))
    standardised = pt.softplus(argument) - shift  # (n − r)/b
    if noise == "gaussian":
        noise_logp = -0.5 * pt.square(standardised)
    else:
        noise_logp = -pt.abs(standardised)
    jacobian = -pt.softplus(-argument)  # log sigmoid
    pm.Potential(f"{name}_n_records_release", pt.sum(noise_logp + jacobian))
    return n


RECORD_COUNT_NODES = 16
"""Quadrature nodes per side of a released record count in :func:`record_count_marginal`."""
_LAGUERRE_X, _LAGUERRE_W = np.polynomial.laguerre.laggauss(RECORD_COUNT_NODES)
_LEGENDRE_T, _LEGENDRE_W = np.polynomial.legendre.leggauss(RECORD_COUNT_NODES)
_FAR_SCALES = 40.0  # a count released this many noise scales above 0: no truncation to mind
_GAUSSIAN_SPAN = 8.0  # Gaussian noise: the count within ± this many σ of its release


def record_count_nodes(released_n: Variable, scale: Variable, noise: str = "laplace"):
    """Quadrature of a flat prior on n > 0 times the noise density of its release r.

    Returns ``(nodes, log_weights)``, each (G, M): Σ_k exp(log_weights) g(nodes) ≈
    ∫_{n>0} p(r − n) g(n) dn for any smooth g, p the noise density. Laplace(b): n = s + b·x
    above s = max(r, 0) and n = r − b·x below r, each side a Gauss–Laguerre rule
    (``RECORD_COUNT_NODES`` nodes) for the factor e^{−x}; below r, where r is under
    40 scales from 0, a Gauss–Legendre rule on [0, r] instead (a Laguerre rule cut at
    n = 0 would integrate a jump). Gaussian N(0, σ²): Gauss–Legendre with twice the nodes on
    n ∈ [max(0, r − 8σ), max(r, 0) + 8σ]. Against adaptive quadrature of the Poisson
    marginal the log error is below 3·10⁻⁴ from empty cells to 5,000 records
    (``tests/families/test_bounded_families.py``). Built from the release and the scale
    only (public); no gradient flows through the nodes.
    """
    r = pt.as_tensor(released_n)[:, None]
    b = pt.as_tensor(scale)
    if noise == "gaussian":
        t = np.concatenate([_LEGENDRE_T, _LEGENDRE_T])  # 2K nodes: the halves of the span
        v = np.concatenate([_LEGENDRE_W, _LEGENDRE_W])
        half = np.arange(2 * RECORD_COUNT_NODES) >= RECORD_COUNT_NODES
        low = pt.maximum(r - _GAUSSIAN_SPAN * b, 0.0)
        high = pt.maximum(r, 0.0) + _GAUSSIAN_SPAN * b
        middle = (low + high) / 2.0
        start = pt.switch(half[None, :], middle, low)
        width = (high - low) / 2.0  # each half [start, start + width]
        nodes = start + (t[None, :] + 1.0) / 2.0 * width
        log_weights = (
            np.log(v / 2.0)[None, :]
            + pt.log(width)
            - 0.5 * pt.square((nodes - r) / b)
            - pt.log(b * math.sqrt(2.0 * math.pi))
        )
        return pt.maximum(nodes, 1e-12), log_weights
    x, w = _LAGUERRE_X[None, :], _LAGUERRE_W[None, :]
    floor = pt.maximum(r, 0.0)
    above = floor + b * x
    above_log_weights = np.log(w / 2.0) - (floor - r) / b
    depth = r / b  # how far above 0 the release is, in noise scales
    far = pt.ge(depth, _FAR_SCALES)
    span = pt.clip(depth, 0.0, _FAR_SCALES)
    legendre_x = (_LEGENDRE_T[None, :] + 1.0) / 2.0 * span
    below = pt.switch(far, r - b * x, r - b * legendre_x)
    below_log_weights = pt.switch(
        far,
        np.log(w / 2.0),
        np.log(_LEGENDRE_W / 4.0)[None, :] + pt.log(pt.maximum(span, 1e-300)) - legendre_x,
    )
    below_log_weights = pt.switch(pt.gt(depth, 0.0), below_log_weights, -np.inf)
    nodes = pt.concatenate([above, pt.maximum(below, 1e-12)], axis=1)
    log_weights = pt.concatenate([above_log_weights, below_log_weights], axis=1)
    return nodes, log_weights


def record_count_marginal(
    log_likelihood, released_n: Variable, scale: Variable, noise: str = "laplace"
) -> Variable:
    """log ∫_{n>0} p(r − n) exp(log_likelihood(n)) dn per group (G,): a private record count
    integrated out under a flat prior on n > 0 (:func:`record_count_nodes`), in place of a
    latent count (:func:`latent_record_count`) that NUTS would have to sample.
    ``log_likelihood`` maps counts (G, M) to log densities (G, M) of the rest of the release.
    """
    nodes, log_weights = record_count_nodes(released_n, scale, noise)
    return pt.logsumexp(log_likelihood(nodes) + log_weights, axis=1)


def record_count_initial_offset(released_n, scale) -> np.ndarray:
    """Start of ``<name>_n_records_offset`` (:func:`latent_record_count`) at which every
    latent count is ≥ 1 even after PyMC's start jitter (±1 on the offset): 0 where the
    released count r is at least b · softplus⁻¹(1/b) + b (then n ≥ 1 at u ≥ −1, and a
    well-populated cell starts at its release), the u with n = 1 at u − 1 below. Public:
    reads the release only. (A cell or group with few records has a released count near or
    below 0; the map keeps n > 0, but a start at n ≪ 1 puts the sampler where the
    statistics' variance given n nearly vanishes.)"""
    released_n = np.asarray(released_n, dtype=np.float64).reshape(-1)
    scale = float(scale)
    one = 1.0 / scale
    inverse_softplus_one = one + np.log(-np.expm1(-one))  # softplus⁻¹(1/b), stable
    return np.maximum(0.0, inverse_softplus_one - released_n / scale + 1.0)


def positive_counts(n: Variable, log_likelihood: Variable) -> Variable:
    """``log_likelihood`` where every latent count is > 0 (the flat prior's support), else −∞."""
    return pt.switch(pt.all(pt.gt(n, 0)), log_likelihood, -np.inf)


def _numbers(values) -> str:
    values = np.asarray(values).reshape(-1)
    if np.all(values == values[0]):
        return f"{values[0]:g}"
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"
