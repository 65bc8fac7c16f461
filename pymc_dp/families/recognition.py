"""What the bounded families' recognition shares: declared bounds, cells, covariate bins.

Each family recognises its own likelihoods
(:meth:`~pymc_dp.families.bounded.BoundedFamily.recognise` in
:mod:`~pymc_dp.families.poisson`, :mod:`~pymc_dp.families.normal`,
:mod:`~pymc_dp.families.regression`, :mod:`~pymc_dp.families.cells`); the helpers here are
the parts two or more of them read: the lookup of a declared bound, the private label and
covariate arrays of a parameter read per cell, the public bins of per-record covariates, the
refusal of a parameter that reads its own records and the refusal of an unsupported form.
Everything reads the graph and the declarations; the label and covariate arrays returned by
:func:`cell_labels` and :func:`cell_covariates` are private and go only into a
:class:`~pymc_dp.families.bounded.BoundedLink`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.base import is_integer
from pymc_dp.families.bounded import MAX_COVARIATE_BINS, CovariateBins, declared_bounds
from pymc_dp.graph.cells import CellParameter, record_covariates
from pymc_dp.graph.reading import (
    is_data,
    record_values,
    require_as_is,
    rv_shape,
    unsupported_likelihood,
    variable_value,
)

__all__ = [
    "DEFAULT_COVARIATE_BINS",
    "LAPLACE_ROUTE",
    "cell_covariates",
    "cell_labels",
    "covariate_bins_of",
    "label_names",
    "refuse_parameters_reading_records",
    "refuse_unusable_constant_sigma",
    "required_bounds",
    "unsupported",
    "vector_length",
]

LAPLACE_ROUTE = "The Laplace statistics (mechanism='laplace')"
"""The route every bounded family's refusals name."""


def unsupported(name: str, found: str) -> NonPrivateModelError:
    """The refusal of a form no family takes, listing every supported likelihood."""
    from pymc_dp.families import LAPLACE_PATTERNS  # the registry, built from every family

    return unsupported_likelihood(name, found, LAPLACE_ROUTE, LAPLACE_PATTERNS)


def required_bounds(
    data_bounds: Mapping[str, object], key: str, observed: str, what: str, width: int | None = None
):
    """The declared (low, high) under ``key``, validated; a refusal naming it when missing."""
    if key not in data_bounds:
        raise NonPrivateModelError(
            f"{observed}: the Laplace statistics need a declared range of its {what}: the "
            f"bound data_bounds[{key!r}] = (low, high) is missing. Choose it without looking "
            "at the data (a bound read off the data would leak it). Nothing was released."
        )
    return declared_bounds(data_bounds[key], key, what, width)


def cell_labels(cells: CellParameter, name: str) -> np.ndarray | None:
    """The label arrays of a cell parameter, one column each (n, k), or None. **Private.**"""
    if not cells.labels:
        return None
    return np.column_stack(
        [record_values(label, name, "group labels").reshape(-1) for label in cells.labels]
    )


def label_names(model: pm.Model, labels, name: str) -> tuple[str, ...]:
    """Public names of the group-label arrays a likelihood reads, for its ledger event: a
    ``pm.Data`` container's name, ``<observed>_group_labels`` for a constant array."""
    names = []
    for label in labels:
        named = getattr(label, "name", None)
        names.append(named if named in model.named_vars else f"{name}_group_labels")
    return tuple(dict.fromkeys(names))


def cell_covariates(cells: CellParameter, name: str) -> np.ndarray | None:
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
    (:func:`~pymc_dp.graph.cells.record_covariates`). It needs declared bounds,
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
        low, high = required_bounds(data_bounds, key, observed, f"covariates {key!r}", width=width)
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


def vector_length(model: pm.Model, rate: Variable) -> int:
    """G: the length of a vector of group-level values (static, the model's shapes, or
    evaluated)."""
    if rate.type.shape[0] is not None:
        return int(rate.type.shape[0])
    if rate in model.free_RVs:
        return int(rv_shape(model, rate)[0])
    return int(rate.shape[0].eval())


def refuse_parameters_reading_records(
    name: str, parameters: Mapping[str, Variable], containers
) -> None:
    """Refuse a parameter graph that reads the likelihood's records, covariates or labels
    (``containers``: the arrays themselves, :func:`~pymc_dp.graph.reading.require_as_is`)."""
    leaves = set(containers)
    for role, graph in parameters.items():
        read = [a for a in ancestors([graph]) if a in leaves]
        if read:
            raise NonPrivateModelError(
                f"{name}: its {role} reads the likelihood's own records (observed values, "
                "covariates or group labels); a parameter computed from the data is a release "
                "the mechanism cannot account for. Nothing was released."
            )


def refuse_unusable_constant_sigma(name: str, sigma: Variable, model: pm.Model) -> None:
    """Refuse a Normal sd that is a constant (data) but not finite and > 0, before any
    release: the run would otherwise fail after its charge."""
    if not is_data(sigma, model):
        return
    value = np.asarray(variable_value(sigma), dtype=np.float64)
    if not np.all(np.isfinite(value) & (value > 0)):
        raise NonPrivateModelError(
            f"{name}: its Normal sigma is a constant that is not finite and > 0. "
            "Nothing was released."
        )
