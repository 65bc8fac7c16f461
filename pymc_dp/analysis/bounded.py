"""Recognise the likelihoods with declared record bounds on the Laplace statistics, or refuse.

Three shapes are recognised, exactly (anything else that reads the records or covariates is
refused here or by the default-deny classifier, :mod:`pymc_dp.analysis.inputs`):

* **Poisson** — ``pm.Poisson("y", mu=lam)`` or ``mu=lam[group]``: ``lam`` a graph of free
  variables of shape () or (G,) (any positive prior), ``group`` a constant vector of integer
  labels; ``data_bounds={"y": (0, c)}``.
* **Normal** — ``pm.Normal("y", mu=mu, sigma=sigma)``: ``mu`` and ``sigma`` scalar graphs
  (free variables with any priors, or constants); ``data_bounds={"y": (a, b)}``. Or group
  means: ``mu`` any graph of group-level means picked by private group labels
  (``theta[g]``, ``mu + tau * z[g]``, ``a[g1] + b[g2]``: read per cell,
  :func:`~pymc_dp.analysis.cells.cell_parameter`), ``sigma`` one scalar or read by the same
  labels (``sigma[g]``).
* **Linear regression** — ``pm.Normal("y", mu=X @ beta + alpha, sigma=sigma)``, also
  ``alpha + X @ beta``, ``pm.math.dot(X, beta)`` and ``X @ beta`` without intercept: ``X`` a
  ``pm.Data`` container or a constant matrix (n, p) of covariates (private, read only by this
  likelihood), ``beta`` a graph of shape (p,), ``alpha`` and ``sigma`` scalar graphs;
  ``data_bounds={"y": (a, b), "X": (lo, hi)}`` with per-column or common covariate bounds,
  keyed by the container's name (for a constant matrix: ``"<y>_covariates"``).

The records, the group labels and the covariates must be the arrays or ``pm.Data`` containers
themselves, used as is: the statistics are computed from the container's values, so a cast,
scaling, slice, power, join or any other transformation between the container and the
likelihood would release statistics of other values than the likelihood reads (a posterior
for a different model than the one written). Such a form is refused, naming what was found.
The one wrapper let through is PyMC's own cast of the observed values to the likelihood's
dtype, directly on the container, when it changes no value that passes validation (a
widening cast; or float to integer counts of a Poisson, whose records are refused unless
whole numbers). The rule is :func:`pymc_dp.analysis.graph.require_as_is`, shared with the
conjugate recogniser.

No parameter graph may read a record, a covariate or a group label (a σ computed from the
data would put a statistic of the records into the private model). A handled likelihood
claims its records, its group labels and its covariates
(:func:`~pymc_dp.analysis.inputs.refuse_private_reads`); no other variable may read them.

The privacy unit is one element of the observed vector, with its group label or its row of
covariates.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors
from pytensor.scalar.basic import Add
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot

from pymc_dp.analysis.cells import cell_parameter, record_covariates, record_length
from pymc_dp.analysis.graph import (
    OBSERVED,
    describe_graph,
    deterministic_of,
    distribution_name,
    is_data,
    likelihoods,
    record_values,
    require_as_is,
    rv_shape,
    split_parameter,
    strip_expand_dims,
    unsupported_likelihood,
    variable_value,
    wrapped_parameter,
)
from pymc_dp.distributions import TruncatedDirichletRV
from pymc_dp.errors import NonPrivateModelError, value_free_repr
from pymc_dp.families import BOUNDED_FAMILIES, LAPLACE_PATTERNS
from pymc_dp.families.base import is_integer, require_integers
from pymc_dp.families.bounded import (
    MAX_COVARIATE_BINS,
    BoundedLink,
    BoundedStructure,
    CovariateBins,
    declared_bounds,
    refuse_latent_name_clash,
)
from pymc_dp.records import dask_records

__all__ = [
    "BOUNDED_LIKELIHOODS",
    "CELL_LIKELIHOODS",
    "DEFAULT_COVARIATE_BINS",
    "MAX_CELL_TRIALS",
    "BoundedFound",
    "bounded_data_bounds_keys",
    "covariate_bins_of",
    "find_bounded_link",
    "find_cell_link",
    "is_bounded_likelihood",
    "is_cell_likelihood",
]

BOUNDED_LIKELIHOODS = ("poisson", "normal")
"""The likelihoods of the bounded families (:mod:`pymc_dp.families.bounded`)."""
_LIKELIHOODS = likelihoods(BOUNDED_LIKELIHOODS)
_ROUTE = "The Laplace statistics (mechanism='laplace')"


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedFound:
    """A recognised bounded likelihood: its link and the graph inputs it claims.

    Attributes
    ----------
    link : BoundedLink
        Structure and (not yet validated) private records.
    claims : tuple of Variable
        Graph inputs beyond its records and group labels that only this likelihood may read
        (the regression covariates).
    keys : tuple of str
        The ``data_bounds`` keys it reads (observed name, covariates key).
    """

    link: BoundedLink
    claims: tuple[Variable, ...]
    keys: tuple[str, ...]


def is_bounded_likelihood(rv: Variable) -> bool:
    """True for an observed Poisson or Normal variable (a bounded family's likelihood)."""
    return distribution_name(rv, _LIKELIHOODS) is not None


def find_bounded_link(
    model: pm.Model,
    observed_rv: Variable,
    data_bounds: Mapping[str, object],
    clamp: Collection[str] = (),
    covariate_bins: Mapping[str, object] | None = None,
) -> BoundedFound:
    """Recognise one Poisson or Normal likelihood with its declared bounds.

    Parameters
    ----------
    model : pm.Model
    observed_rv : TensorVariable
        An observed Poisson or Normal variable of ``model``.
    data_bounds : dict
        Every declared bound of the run (``{key: (low, high)}``).
    clamp : collection of str
        ``data_bounds`` keys whose records are clamped (opt-in).
    covariate_bins : dict, optional
        ``{covariates key: bins}`` for a Poisson rate read per cell of binned covariates
        (:func:`covariate_bins_of`).

    Raises
    ------
    NonPrivateModelError
        For a shape this module does not recognise, a parameter that reads the records, a
        constant sigma that is not finite and > 0, or a missing bound (the message names the
        variable and the bound to declare).
    ValueError
        For an invalid bound.
    """
    name = observed_rv.name
    refuse_latent_name_clash(model, name)
    likelihood = distribution_name(observed_rv, _LIKELIHOODS)
    params = observed_rv.owner.op.dist_params(observed_rv.owner)
    values = model.rvs_to_values[observed_rv]
    if likelihood == "poisson":
        return _poisson(model, name, params[0], values, data_bounds, clamp, covariate_bins)
    mu, sigma = (strip_expand_dims(p) for p in params)
    if sigma.ndim != 0:
        if mu.ndim != 0 and _linear_predictor(mu) is not None:
            raise NonPrivateModelError(
                f"{name}: a regression's Normal sigma must be one scalar (a free variable or a "
                "constant). Nothing was released."
            )
        deterministic = deterministic_of(sigma, model)
        if deterministic is not None:
            raise wrapped_parameter(name, "sd", deterministic)
        return _normal_cells(model, name, mu, sigma, values, data_bounds, clamp)
    if is_data(sigma, model):
        value = np.asarray(variable_value(sigma), dtype=np.float64)
        if not (np.isfinite(value) and value > 0):
            raise NonPrivateModelError(
                f"{name}: its Normal sigma is a constant that is not finite and > 0. "
                "Nothing was released."
            )
    if mu.ndim == 0:
        return _normal(model, name, mu, sigma, values, data_bounds, clamp)
    linear = _linear_predictor(mu)
    if linear is None:
        deterministic = deterministic_of(mu, model)
        if deterministic is not None:
            raise wrapped_parameter(name, "mean", deterministic)
        return _normal_cells(model, name, mu, sigma, values, data_bounds, clamp)
    return _regression(model, name, *linear, sigma, values, data_bounds, clamp)


def bounded_data_bounds_keys(found: Mapping[str, BoundedFound]) -> set[str]:
    """Every ``data_bounds`` key the recognised likelihoods read."""
    return {key for f in found.values() for key in f.keys}


# --- the three shapes ----------------------------------------------------------------------


def _bounds(data_bounds, key: str, observed: str, what: str, width: int | None = None):
    if key not in data_bounds:
        raise NonPrivateModelError(
            f"{observed}: the Laplace statistics need a declared range of its {what}: the "
            f"bound data_bounds[{key!r}] = (low, high) is missing. Choose it without looking "
            "at the data (a bound read off the data would leak it). Nothing was released."
        )
    return declared_bounds(data_bounds[key], key, what, width)


def _poisson(model, name, mu, values, data_bounds, clamp, covariate_bins) -> BoundedFound:
    try:
        rate, index = split_parameter(mu, model, name)
    except NonPrivateModelError:  # lam[g1, g2], exp(a + X @ b), …: read per cell below
        rate, index = strip_expand_dims(mu), None
    if index is None and rate.ndim != 0:
        if deterministic_of(rate, model) is None:
            return _poisson_cells(model, name, rate, values, data_bounds, clamp, covariate_bins)
        deterministic = deterministic_of(rate, model)
        if deterministic is not None:
            raise wrapped_parameter(name, "rate", deterministic)
        found = (
            "a Poisson with a per-record rate (neither one scalar nor a graph of group-level "
            f"rates picked by group labels): {describe_graph(rate)}"
        )
        raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS)
    if index is not None and rate.ndim != 1:
        raise NonPrivateModelError(
            f"{name}: its Poisson rate lam in lam[group] must be a vector (one rate per group)"
        )
    sources = [require_as_is(values, name, OBSERVED)]
    if index is not None:
        sources.append(require_as_is(index, name, "group labels"))
    low, high = _count_bounds(data_bounds, name)
    data = record_values(values, name, OBSERVED).reshape(-1)
    groups = None
    n_groups = 1
    if index is not None:
        groups = record_values(index, name, "group labels").reshape(-1)
        n_groups = _length(model, rate)
    _refuse_parameters_reading_records(name, {"rate": rate}, sources)
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["poisson"],
        bounds=(low, high),
        parameters={"rate": rate},
        n_groups=n_groups,
        grouped=index is not None and n_groups > 1,
        group_variable=rate.name if rate.name in model.named_vars else "",
        clamp=frozenset(k for k in clamp if k == name),
    )
    return BoundedFound(BoundedLink(structure, data, groups=groups), (), (name,))


def _count_bounds(data_bounds, name: str) -> tuple[float, float]:
    """The declared (low, high) of Poisson counts: whole numbers, low ≥ 0."""
    low, high = _bounds(data_bounds, name, name, "counts")
    if low < 0 or low != int(low) or high != int(high):
        raise ValueError(
            f"data_bounds[{name!r}] of Poisson counts must be whole counts >= 0, got "
            f"{data_bounds[name]!r}"
        )
    return low, high


def _cell_labels(cells, name: str) -> np.ndarray | None:
    """The label arrays of a cell parameter, one column each (n, k), or None. **Private.**"""
    if not cells.labels:
        return None
    return np.column_stack(
        [record_values(label, name, "group labels").reshape(-1) for label in cells.labels]
    )


def _cell_covariates(cells, name: str) -> np.ndarray | None:
    """The binned covariates of a cell parameter, their columns side by side (n, d), or
    None. **Private.**"""
    if not cells.covariates:
        return None
    columns = [record_values(c, name, "covariates") for c in cells.covariates]
    return np.column_stack([c[:, None] if c.ndim == 1 else c for c in columns])


DEFAULT_COVARIATE_BINS = 10
"""Bins per floating-point covariate column when ``covariate_bins`` does not name it."""


def covariate_bins_of(
    model: pm.Model,
    observed: str,
    param: Variable,
    n_records: int,
    data_bounds: Mapping[str, object],
    covariate_bins: Mapping[str, object] | None,
) -> dict[Variable, CovariateBins]:
    """The public bins of every per-record covariate ``param`` reads, from the declarations.

    A covariate is a ``pm.Data`` container (key: its name) or one constant array (key:
    ``"<observed>_covariates"``) with one row per record that is not a group label
    (:func:`~pymc_dp.analysis.cells.record_covariates`). It needs declared bounds,
    ``data_bounds[key] = (low, high)`` (one pair, or one per column), and is read in
    ``covariate_bins[key]`` bins per column: an integer ≥ 1 (default
    :data:`DEFAULT_COVARIATE_BINS` for floating-point arrays), ``"levels"`` (the whole
    numbers low..high, exactly: the default for integer arrays), or a list with one of
    these per column.

    Raises
    ------
    NonPrivateModelError
        For a missing bound (naming the key), or several unnamed constant covariates.
    ValueError
        For bad bounds or bins (naming the key).
    """
    covariates = record_covariates(param, model, n_records)
    data_names = {v.name for v in model.data_vars}
    unnamed = [c for c in covariates if c.name not in data_names]
    if len(unnamed) > 1:
        raise NonPrivateModelError(
            f"{observed}: its parameter reads {len(unnamed)} unnamed per-record covariate "
            "arrays; wrap each in pm.Data('name', array) so that its bounds and bins can be "
            "declared by name. Nothing was released."
        )
    found = {}
    for covariate in covariates:
        key = covariate.name if covariate.name in data_names else f"{observed}_covariates"
        require_as_is(covariate, observed, f"covariates {key!r}")
        width = (
            1 if covariate.ndim < 2 else int(record_values(covariate, key, "covariates").shape[1])
        )
        low, high = _bounds(data_bounds, key, observed, f"covariates {key!r}", width=width)
        spec = (covariate_bins or {}).get(key)
        found[covariate] = _covariate_bins(key, low, high, spec, covariate.dtype)
    return found


def _covariate_bins(key: str, low, high, spec, dtype: str) -> CovariateBins:
    width = low.size
    default = "levels" if dtype.startswith(("int", "uint", "bool")) else DEFAULT_COVARIATE_BINS
    hint = ""
    if spec is None:
        spec = default
        if default == "levels":
            hint = (
                f" ('levels' is the default for an integer array; give covariate_bins="
                f"{{{key!r}: B}} to cut it into B bins instead)"
            )
    per_column = list(spec) if isinstance(spec, list | tuple) else [spec] * width
    if len(per_column) != width:
        raise ValueError(
            f"covariate_bins[{key!r}] gives {len(per_column)} entries for {width} columns"
        )
    bins = np.empty(width, dtype=np.int64)
    levels = np.zeros(width, dtype=bool)
    for j, entry in enumerate(per_column):
        if entry == "levels":
            if low[j] != np.round(low[j]) or high[j] != np.round(high[j]):
                raise ValueError(
                    f"covariate_bins[{key!r}]: a column read at its levels needs whole-number "
                    f"data_bounds, got [{low[j]:g}, {high[j]:g}]{hint}"
                )
            levels[j] = True
            bins[j] = int(high[j] - low[j]) + 1
        elif is_integer(entry) and entry >= 1:
            bins[j] = int(entry)
        else:
            raise ValueError(
                f"covariate_bins[{key!r}] must be an integer >= 1, 'levels' or a list of them "
                f"(one per column), got {entry!r}"
            )
        if bins[j] > MAX_COVARIATE_BINS:
            raise ValueError(
                f"covariate_bins[{key!r}]: {bins[j]} bins or levels in a column, more than "
                f"{MAX_COVARIATE_BINS}{hint}"
            )
    return CovariateBins(key, low, high, bins, levels)


def _poisson_cells(model, name, rate, values, data_bounds, clamp, covariate_bins):
    """A Poisson whose rate is any graph of group-level rates picked by group labels and of
    binned covariates (``exp(a[g1] + b[g2])``, ``lam[g1, g2]``, ``exp(a + X @ beta)``, …):
    the per-cell (n_c, Σy_c/c) of :class:`~pymc_dp.families.poisson.PoissonFamily`, one row
    per cell (:func:`~pymc_dp.analysis.cells.cell_parameter`)."""
    container = require_as_is(values, name, OBSERVED)
    if dask_records(container) is not None:
        raise NonPrivateModelError(
            f"{name}: records in a Dask collection are not supported for a rate read per "
            "cell of several labels, of covariates or through a link; give the records in "
            "memory. Nothing was released."
        )
    n_records = record_length(container.reshape((-1,)))
    bins = covariate_bins_of(model, name, rate, n_records, data_bounds, covariate_bins)
    cells = cell_parameter(rate, model, name, n_records, bins=bins)
    low, high = _count_bounds(data_bounds, name)
    data = record_values(values, name, OBSERVED).reshape(-1)
    keys = tuple(b.key for b in cells.covariate_bins)
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["poisson"],
        bounds=(low, high),
        parameters={"rate": cells.graph},
        n_groups=cells.n_cells,
        grouped=cells.n_cells > 1,
        clamp=frozenset(k for k in clamp if k in (name, *keys)),
        label_sizes=cells.sizes,
        covariate_bins=cells.covariate_bins,
    )
    link = BoundedLink(
        structure, data, groups=_cell_labels(cells, name), covariates=_cell_covariates(cells, name)
    )
    return BoundedFound(link, (*cells.labels, *cells.covariates), (name, *keys))


def _normal(model, name, mu, sigma, values, data_bounds, clamp) -> BoundedFound:
    container = require_as_is(values, name, OBSERVED)
    bounds = _bounds(data_bounds, name, name, "values")
    data = record_values(values, name, OBSERVED).reshape(-1)
    parameters = {"mu": mu, "sigma": sigma}
    _refuse_parameters_reading_records(name, parameters, [container])
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["normal"],
        bounds=bounds,
        parameters=parameters,
        clamp=frozenset(k for k in clamp if k == name),
    )
    return BoundedFound(BoundedLink(structure, data), (), (name,))


def _normal_cells(model, name, mu, sigma, values, data_bounds, clamp) -> BoundedFound:
    """A Normal whose mean, sd or both are graphs of group-level quantities picked by group
    labels (``theta[g]``, ``mu + tau * z[g]``, ``a[g1] + b[g2]``, ``sigma[g]``; the other a
    scalar, or both reading the same labels): the per-cell (n_c, Σu_c, Σu²_c) of
    :class:`~pymc_dp.families.normal.NormalFamily`, one row per cell
    (:func:`~pymc_dp.analysis.cells.cell_parameter`). A mean that reads per-record
    covariates other than ``X @ beta (+ alpha)`` is refused: averaged over a bin it is not
    the mean of a Normal; so is an sd that reads any."""
    container = require_as_is(values, name, OBSERVED)
    n_records = record_length(container.reshape((-1,)))
    found_cells = {}
    for role, param in (("mean", mu), ("sd", sigma)):
        if param.ndim == 0:
            continue
        if record_covariates(param, model, n_records):
            found = (
                f"a Normal whose {role} reads per-record covariates in another form than "
                f"X @ beta (+ alpha) for the mean: {describe_graph(param)}"
            )
            raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS)
        try:
            cells = cell_parameter(param, model, name, n_records)
        except NonPrivateModelError as error:
            found = (
                f"a Normal whose {role} is neither a scalar, nor group-level values picked by "
                f"group labels ({error}): {describe_graph(param)}"
            )
            raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS) from None
        if not cells.labels:
            found = (
                f"a Normal whose {role} varies by record without group labels: "
                f"{describe_graph(param)}"
            )
            raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS)
        found_cells[role] = cells
    if len(found_cells) == 2 and found_cells["mean"].labels != found_cells["sd"].labels:
        raise NonPrivateModelError(
            f"{name}: its Normal mean and sd read different group labels (or the same in "
            "another order); read both per the same labels, e.g. theta[g] and sigma[g]. "
            "Nothing was released."
        )
    cells = found_cells.get("mean") or found_cells["sd"]
    if dask_records(container) is not None:
        raise NonPrivateModelError(
            f"{name}: records in a Dask collection are not supported for a Normal read per "
            "group; give the records in memory. Nothing was released."
        )
    bounds = _bounds(data_bounds, name, name, "values")
    data = record_values(values, name, OBSERVED).reshape(-1)
    parameters = {
        role: found_cells[key].graph if key in found_cells else param
        for role, key, param in (("mu", "mean", mu), ("sigma", "sd", sigma))
    }
    if "sd" in found_cells and not any(
        v in model.free_RVs for v in ancestors([found_cells["sd"].graph])
    ):  # a public constant per group: checked here, or the run would fail after its charge
        value = np.asarray(found_cells["sd"].graph.eval(), dtype=np.float64)
        if not np.all(np.isfinite(value) & (value > 0)):
            raise NonPrivateModelError(
                f"{name}: its Normal sigma per group is a constant with values that are not "
                "finite and > 0. Nothing was released."
            )
    # the labels may not be the records themselves (a parameter that reads its own values)
    _refuse_parameters_reading_records(name, {"mean": mu, "sigma": sigma}, [container])
    for role, key, param in (("mean", "mean", mu), ("sigma", "sd", sigma)):
        if key not in found_cells:  # a scalar may not read the labels either
            _refuse_parameters_reading_records(name, {role: param}, list(cells.labels))
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["normal"],
        bounds=bounds,
        parameters=parameters,
        n_groups=cells.n_cells,
        grouped=True,
        clamp=frozenset(k for k in clamp if k == name),
        label_sizes=cells.sizes,
    )
    link = BoundedLink(structure, data, groups=_cell_labels(cells, name))
    return BoundedFound(link, tuple(cells.labels), (name,))


def _regression(model, name, covariates, beta, alpha, sigma, values, data_bounds, clamp):
    leaf = require_as_is(covariates, name, "covariates")  # the container itself
    container = require_as_is(values, name, OBSERVED)
    x = record_values(covariates, name, "covariates")
    data_names = {v.name for v in model.data_vars}
    key = leaf.name if leaf.name in data_names else f"{name}_covariates"
    if x.ndim != 2:
        raise NonPrivateModelError(
            f"{name}: its covariates {key!r} must be a matrix (records × covariates), got "
            f"{x.ndim} dimension(s)"
        )
    p = int(x.shape[1])
    if beta.type.shape[0] not in (None, p):
        raise NonPrivateModelError(
            f"{name}: beta has {beta.type.shape[0]} coefficients for {p} covariates"
        )
    bounds = _bounds(data_bounds, name, name, "values")
    covariate_bounds = _bounds(data_bounds, key, name, f"covariates {key!r}", width=p)
    data = record_values(values, name, OBSERVED)
    if data.ndim != 1:
        raise NonPrivateModelError(
            f"{name}: a regression's observed values must be a vector (one per row of {key!r})"
        )
    parameters = {"beta": beta, "sigma": sigma}
    if alpha is not None:
        parameters["alpha"] = alpha
    _refuse_parameters_reading_records(name, parameters, [container, leaf])
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["linear-regression"],
        bounds=bounds,
        parameters=parameters,
        covariates=key,
        covariate_bounds=covariate_bounds,
        clamp=frozenset(k for k in clamp if k in (name, key)),
    )
    return BoundedFound(BoundedLink(structure, data, covariates=x), (leaf,), (name, key))


# --- graph shapes ---------------------------------------------------------------------------


def _linear_predictor(mu: Variable):
    """(X, beta, alpha or None) when ``mu`` is X @ beta, X @ beta + alpha or alpha + X @ beta."""
    product = _matrix_vector(mu)
    if product is not None:
        return (*product, None)
    node = mu.owner
    if (
        node is None
        or not isinstance(node.op, Elemwise)
        or not isinstance(node.op.scalar_op, Add)
        or len(node.inputs) != 2
    ):
        return None
    first, second = (strip_expand_dims(i) for i in node.inputs)
    for term, other in ((first, second), (second, first)):
        product = _matrix_vector(term)
        if product is not None and other.ndim == 0:
            return (*product, other)
    return None


def _matrix_vector(term: Variable):
    """(X, beta) when ``term`` is X @ beta (Dot or Matmul of a matrix and a vector)."""
    node = term.owner
    if node is None:
        return None
    if isinstance(node.op, DimShuffle) and node.op.input_ndim == 2 and node.op.new_order == (0,):
        inner = node.inputs[0].owner  # squeeze(X @ expand_dims(beta, 1), 1)
        if inner is None or not _is_dot(inner.op) or len(inner.inputs) != 2:
            return None
        matrix, column = inner.inputs
        vector = column.owner.inputs[0] if _is_column(column) else None
        if vector is None or matrix.ndim != 2:
            return None
        return matrix, vector
    if _is_dot(node.op) and len(node.inputs) == 2:
        matrix, vector = node.inputs
        if matrix.ndim == 2 and vector.ndim == 1:
            return matrix, vector
    return None


def _is_dot(op) -> bool:
    return isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot))


def _is_column(variable: Variable) -> bool:
    node = variable.owner
    return (
        node is not None
        and isinstance(node.op, DimShuffle)
        and node.op.input_ndim == 1
        and node.op.new_order == (0, "x")
    )


def _length(model: pm.Model, rate: Variable) -> int:
    """G: the length of a rate vector (static, the model's shapes, or evaluated)."""
    if rate.type.shape[0] is not None:
        return int(rate.type.shape[0])
    if rate in model.free_RVs:
        return int(rv_shape(model, rate)[0])
    return int(rate.shape[0].eval())


def _refuse_parameters_reading_records(
    name: str, parameters: Mapping[str, Variable], containers
) -> None:
    """Refuse a parameter graph that reads the likelihood's records, covariates or labels
    (``containers``: the arrays themselves, :func:`~pymc_dp.analysis.graph.require_as_is`)."""
    leaves = set(containers)
    for role, graph in parameters.items():
        read = [a for a in ancestors([graph]) if a in leaves]
        if read:
            raise NonPrivateModelError(
                f"{name}: its {role} reads the likelihood's own records (observed values, "
                "covariates or group labels); a parameter computed from the data is a release "
                "the mechanism cannot account for. Nothing was released."
            )


# --- count likelihoods read per cell --------------------------------------------------------

MAX_CELL_TRIALS = 10_000
"""Most trials per record of a Binomial read per cell (public; checked before any release)."""
CELL_LIKELIHOODS = ("bernoulli", "binomial", "categorical")
"""Likelihoods the cell-count family takes when their probability is not a conjugate prior."""
_CELL_TABLE = likelihoods(CELL_LIKELIHOODS)
_CONJUGATE_PRIORS = {"beta": pm.Beta, "dirichlet": pm.Dirichlet}


def is_cell_likelihood(model: pm.Model, rv: Variable) -> bool:
    """True for an observed Bernoulli, Binomial or Categorical whose probability is not a
    Beta/Dirichlet free variable (or one indexed by group labels): those go to the conjugate
    families; the rest are read per cell (:func:`find_cell_link`) or refused there."""
    if distribution_name(rv, _CELL_TABLE) is None:
        return False
    prob = rv.owner.op.dist_params(rv.owner)[-1]
    try:
        prior, _ = split_parameter(prob, model, rv.name)
    except NonPrivateModelError:
        return True
    if prior in model.free_RVs and distribution_name(prior, _CONJUGATE_PRIORS) is not None:
        return False
    if prior.owner is not None and isinstance(prior.owner.op, TruncatedDirichletRV):
        return False  # refused by the conjugate recogniser, with its reason
    return deterministic_of(prior, model) is None or not _wraps_conjugate(prior, model)


def _wraps_conjugate(variable: Variable, model: pm.Model) -> bool:
    """A Deterministic that only renames a Beta/Dirichlet free variable (the conjugate
    recogniser asks to remove it)."""
    inner = variable.owner.inputs[0] if variable.owner is not None else None
    return inner in model.free_RVs and distribution_name(inner, _CONJUGATE_PRIORS) is not None


def find_cell_link(
    model: pm.Model,
    rv: Variable,
    data_bounds: Mapping[str, object] | None = None,
    clamp: Collection[str] = (),
    covariate_bins: Mapping[str, object] | None = None,
) -> BoundedFound:
    """The cell-count link of one Bernoulli/Binomial/Categorical likelihood, or a refusal.

    ``data_bounds``, ``clamp`` and ``covariate_bins`` declare the per-record covariates the
    probability reads (:func:`covariate_bins_of`): logistic regression, alone or with
    varying intercepts and slopes by private groups.

    Raises
    ------
    NonPrivateModelError
        For per-record or random trials, records in a Dask collection, records or labels
        computed in the graph, a covariate without declared bounds, or a probability that is
        not a cell parameter (:func:`~pymc_dp.analysis.cells.cell_parameter`).
    """
    name = rv.name
    refuse_latent_name_clash(model, name)
    likelihood = distribution_name(rv, _CELL_TABLE)
    params = rv.owner.op.dist_params(rv.owner)
    values = model.rvs_to_values[rv]
    container = require_as_is(values, name, OBSERVED)
    if dask_records(container) is not None:
        raise NonPrivateModelError(
            f"{name}: records in a Dask collection are not supported for a probability read "
            "per cell; give the records in memory. Nothing was released."
        )
    data = record_values(values, name, OBSERVED).reshape(-1)
    trials = 1
    if likelihood == "binomial":
        trials_var = params[0]
        value = variable_value(trials_var) if is_data(trials_var, model) else None
        if value is None or np.size(value) != 1:
            raise NonPrivateModelError(
                f"{name}: a Binomial whose probability is read per cell needs one public "
                "number of trials (a constant), not per-record or random trials. Nothing was "
                "released."
            )
        trials = int(require_integers(np.asarray(value).reshape(()), name, "trials"))
        if not 1 <= trials <= MAX_CELL_TRIALS:
            raise NonPrivateModelError(
                f"{name}: a Binomial read per cell needs between 1 and {MAX_CELL_TRIALS:,} "
                f"trials per record (it has {trials}): the noise grows with the trials, and "
                "the noise-aware likelihood sums over that many counts per entry. Nothing was "
                "released."
            )
    prob = strip_expand_dims(params[-1])
    if likelihood == "categorical":
        n_categories = prob.type.shape[-1]
        n_categories = int(n_categories if n_categories is not None else prob.shape[-1].eval())
    else:
        n_categories = 2
    bins = covariate_bins_of(model, name, prob, data.size, data_bounds or {}, covariate_bins)
    cells = cell_parameter(
        prob, model, name, data.size, event_ndim=1 if likelihood == "categorical" else 0, bins=bins
    )
    keys = tuple(b.key for b in cells.covariate_bins)
    structure = BoundedStructure(
        observed=name,
        family=BOUNDED_FAMILIES["cell-counts"],
        bounds=(0.0, float(trials)),
        parameters={"probability": cells.graph},
        n_groups=cells.n_cells,
        grouped=cells.n_cells > 1,
        likelihood=likelihood,
        n_categories=n_categories,
        label_sizes=cells.sizes,
        covariate_bins=cells.covariate_bins,
        clamp=frozenset(k for k in clamp if k in keys),
    )
    link = BoundedLink(
        structure, data, groups=_cell_labels(cells, name), covariates=_cell_covariates(cells, name)
    )
    return BoundedFound(link, (*cells.labels, *cells.covariates), keys)
