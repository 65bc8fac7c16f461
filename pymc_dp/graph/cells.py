"""Recognise likelihoods whose parameters read the records only through group labels.

A likelihood's parameter is a *cell parameter* when, record by record, it is a function of
group-level quantities picked by private label arrays — ``theta[g]``, ``a[g1] + b[g2]``,
``invlogit(mu + tau * z[g])``, ``softmax(eta[g])``, ``u[g] @ gamma`` computed before the
indexing — and of nothing else that varies by record. Then records with equal labels share
their parameter, the likelihood factorises over *cells* (one per combination of the label
values the graph distinguishes: G₁ × G₂ × … of them) and the per-cell sufficient statistics
carry everything the data say about every parameter above them (hierarchies, non-centred
parameterisations and link functions included: those are post-processing of the cells).

:func:`cell_parameter` checks that shape on the graph alone (no record is read) and rewrites
the parameter per cell: every label array is replaced by the public vector of its value in
each cell, so the rewritten graph has one row per cell. What it accepts between the labels
and the likelihood, exactly:

* ``A[g]`` and ``A[g1, g2, …]`` — advanced indexing of the leading axes of a group-level
  array ``A`` (one that reads no label and no record) by label arrays, the labels used as is;
* elementwise operations (``+``, ``*``, ``exp``, ``sigmoid``, …) between record-level terms and
  group-level terms that broadcast over the records (their leading axis has length 1 or they
  have fewer dimensions);
* ``ExpandDims``/transpositions that keep the record axis first, and ``softmax`` /
  ``log_softmax`` over a trailing (category) axis.

Per-record covariates (``X @ beta``, ``b * x``, ``b * x**2``) join the cells through public
bins of their declared range (:class:`~pymc_dp.families.bounded.CovariateBins`): every
binned column is one more axis of cells, and the rewritten graph evaluates the parameter at
Gauss–Legendre nodes inside each bin and averages it there (a probability or a rate: the
mean of the records' outcomes in the cell, the covariate taken as uniform within its bin).
Columns read at their whole-number levels (0/1 indicators, small counts) are exact. The
approximation is the bins': for a logistic slope β over bins of width w the averaged
probability matches the records' mean to O((βw)⁴) where x is uniform in the bin, and to
first order in the density's slope across the bin otherwise.

Anything else on the path from a label or a covariate to the parameter (a sum over records,
a reshape, a slice of a covariate matrix, a label computed in the graph) is refused, naming
what was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.special import LogSoftmax, Softmax
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_dp.errors import NonPrivateModelError, value_free_repr
from pymc_dp.graph.reading import (
    describe_graph,
    is_data,
    require_as_is,
)

__all__ = ["MAX_CELLS", "MAX_EVALUATIONS", "CellParameter", "cell_parameter", "record_covariates"]

MAX_CELLS = 100_000
"""Most cells a release may have (G₁ × G₂ × …): each is a row of released counts."""
MAX_EVALUATIONS = 1_000_000
"""Most rows of the rewritten parameter graph (cells × quadrature nodes per cell)."""


@value_free_repr
@dataclass(frozen=True, eq=False)
class CellParameter:
    """A likelihood parameter rewritten per cell.

    Attributes
    ----------
    graph : Variable
        The parameter with one row per cell (C, …): the source model's graph with every
        label array replaced by its public value in each cell.
    labels : tuple of Variable
        The label arrays (containers, used as is), in the order of ``sizes``. **Private.**
    sizes : tuple of int
        G_k: the number of values label array k takes (the length of the axis it indexes),
        then the bins of every binned covariate column.
    covariates : tuple of Variable
        The per-record covariate arrays read through bins (containers). **Private.**
    covariate_bins : tuple of CovariateBins
        Their bins, in the same order.
    """

    graph: Variable
    labels: tuple[Variable, ...]
    sizes: tuple[int, ...]
    covariates: tuple[Variable, ...] = ()
    covariate_bins: tuple = ()

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64)) if self.sizes else 1


_DISCONTINUOUS = (
    ps.Switch,
    ps.LT,
    ps.GT,
    ps.LE,
    ps.GE,
    ps.EQ,
    ps.NEQ,
    ps.Floor,
    ps.Ceil,
    ps.Trunc,
    ps.RoundHalfToEven,
    ps.RoundHalfAwayFromZero,
    ps.Sign,
    ps.Mod,
    ps.IntDiv,
)
"""Scalar operations with jumps: refused on a covariate's path (its bins are averaged by
quadrature, which assumes a smooth function within the bin)."""


class _NotCells(Exception):
    """The graph is not a cell parameter; the message says what was found."""


def cell_parameter(
    param: Variable,
    model: pm.Model,
    observed: str,
    n_records: int,
    event_ndim: int = 0,
    bins: Mapping[Variable, object] | None = None,
) -> CellParameter:
    """``param`` (record-level, leading axis the records) rewritten per cell, or a refusal.

    Label arrays are the integer data vectors of length ``n_records`` (one label per record)
    that index a group-level array; an integer vector of another length indexing an array
    (a public map from counties to regions, say) is part of the group-level graph, and must
    be a container or constant used as is. ``event_ndim`` is the number of dimensions of one
    record's parameter (0: a probability or a rate; 1: a Categorical's K probabilities).
    ``bins`` gives every per-record covariate the parameter reads
    (:func:`record_covariates`) its public bins; a covariate without them is refused.

    Raises
    ------
    NonPrivateModelError
        If something other than label indexing and elementwise algebra sits between a label
        array or a covariate and the parameter, a label is computed in the graph, a
        covariate has no bins, or there are more than :data:`MAX_CELLS` cells.
    """
    bins = dict(bins or {})
    labels: dict[Variable, int] = {}
    candidates = _label_candidates(param, model, n_records)
    for node in _index_nodes(param):
        for index in node.inputs[1:]:
            if index not in candidates and index.owner is not None and is_data(index, model):
                raise NonPrivateModelError(
                    f"{observed}: its parameter indexes an array by an index computed from data "
                    f"arrays ({describe_graph(index)}); group labels and group-level maps must "
                    "be the containers themselves, used as is. Nothing was released."
                )
    covariates = record_covariates(param, model, n_records)
    unbinned = [c for c in covariates if c not in bins]
    if unbinned:
        raise NonPrivateModelError(
            f"{observed}: its parameter reads per-record covariates "
            f"({', '.join(c.name or 'a constant array' for c in unbinned)}) with no declared "
            "bins. Nothing was released."
        )
    for covariate in covariates:
        if covariate.ndim > 2:
            raise NonPrivateModelError(
                f"{observed}: its covariates {covariate.name or 'a constant array'} have "
                f"{covariate.ndim} dimensions; a vector (n,) or a matrix (n, d) is read per "
                "cell. Nothing was released."
            )
    try:
        binned = frozenset(c for c in covariates if not np.all(bins[c].levels))
        record_level = _record_level(param, model, candidates, labels, {}, set(covariates), binned)
    except _NotCells as refusal:
        raise NonPrivateModelError(
            f"{observed}: its parameter is not a function of group-level quantities picked by "
            f"group labels and of binned covariates ({refusal}); found "
            f"{describe_graph(param)}. Nothing was released."
        ) from None
    if not record_level:  # one cell: the parameter must be the same for every record
        if param.ndim > event_ndim and _length(param) != 1:
            raise NonPrivateModelError(
                f"{observed}: its parameter varies by record but "
                "reads no group labels: no per-cell statistics carry it (a parameter per "
                "record, or per-record covariates). Nothing was released."
            )
        return CellParameter(param, (), ())
    order = list(labels)
    binned = [(c, bins[c]) for c in covariates]
    sizes = tuple(int(labels[label]) for label in order) + tuple(
        int(b) for _, spec in binned for b in spec.bins
    )
    n_cells = int(np.prod(sizes, dtype=np.int64))
    if n_cells > MAX_CELLS:
        raise NonPrivateModelError(
            f"{observed}: its group labels and covariate bins make {n_cells} cells "
            f"({' × '.join(map(str, sizes))}), more than {MAX_CELLS}: too many rows of counts "
            "to release. Nothing was released."
        )
    for label in order:
        require_as_is(label, observed, "group labels")
    points = [spec.points(j) for _, spec in binned for j in range(spec.n_columns)]
    per_node = [len(weights) for _, weights in points]
    n_nodes = int(np.prod(per_node, dtype=np.int64))
    if n_cells * n_nodes > MAX_EVALUATIONS:
        raise NonPrivateModelError(
            f"{observed}: {n_cells} cells × {n_nodes} quadrature nodes per cell is more than "
            f"{MAX_EVALUATIONS} evaluations of its parameter: use fewer bins or read "
            "indicator columns at their levels. Nothing was released."
        )
    cells = np.repeat(np.arange(n_cells), n_nodes)
    nodes = np.tile(np.arange(n_nodes), n_cells)
    coordinates = np.unravel_index(cells, sizes)
    node_coordinates = np.unravel_index(nodes, per_node) if per_node else ()
    replacements = {
        label: pt.constant(coordinate.astype(label.dtype), name=f"{label.name or 'labels'}_cells")
        for label, coordinate in zip(order, coordinates[: len(order)], strict=True)
    }
    weights = np.ones(cells.size)
    column = 0
    for covariate, spec in binned:
        values = np.empty((cells.size, spec.n_columns))
        for j in range(spec.n_columns):
            at, weight = points[column]
            axis = len(order) + column
            values[:, j] = at[coordinates[axis], node_coordinates[column]]
            weights *= weight[node_coordinates[column]]
            column += 1
        values = values if covariate.ndim == 2 else values[:, 0]
        name = f"{covariate.name or 'covariates'}_cells"
        replacements[covariate] = pt.constant(values.astype(covariate.dtype), name=name)
    graph = _rebuild(param, replacements, {})
    if n_nodes > 1:  # the parameter's mean over each cell's nodes
        shape = (n_cells, n_nodes, *(graph.shape[i] for i in range(1, graph.ndim)))
        w = pt.constant(weights.reshape((n_cells, n_nodes) + (1,) * (graph.ndim - 1)))
        graph = pt.sum(graph.reshape(shape) * w, axis=1)
    return CellParameter(
        graph,
        tuple(order),
        sizes,
        tuple(c for c, _ in binned),
        tuple(spec for _, spec in binned),
    )


def _rebuild(var: Variable, replacements: dict, memo: dict) -> Variable:
    """``var`` with ``replacements`` made: only the nodes that read them are rebuilt (by their
    ops, so shapes follow the per-cell labels), every other variable — the model's random
    variables above all — is kept as is."""
    if var in replacements:
        return replacements[var]
    if var in memo:
        return memo[var]
    node = var.owner
    if node is None or not any(a in replacements for a in ancestors([var])):
        return var
    inputs = [_rebuild(i, replacements, memo) for i in node.inputs]
    rebuilt = node.op.make_node(*inputs).outputs[node.outputs.index(var)]
    memo[var] = rebuilt
    return rebuilt


def _record_level(
    var: Variable,
    model,
    candidates: set,
    labels: dict,
    seen: dict,
    covariates: set,
    binned: frozenset = frozenset(),
) -> bool:
    """Whether ``var`` varies by record (through labels and binned covariates only); raises
    _NotCells otherwise.

    ``labels`` collects label array → number of values (the shortest axis it indexes);
    ``binned`` are the covariates with a column cut into bins (not read at its levels), on
    whose path a discontinuous operation is refused.
    """
    if var in seen:
        return seen[var]
    if var in covariates:
        seen[var] = True
        return True
    reading = candidates | covariates
    node = var.owner
    if node is None or not _reads(var, reading):
        seen[var] = False
        return False
    op = node.op
    if isinstance(op, AdvancedSubtensor):
        base, *indices = node.inputs
        if _reads(base, reading):
            raise _NotCells("a label picks from an array that itself varies by record")
        if list(op.idx_list) != list(range(len(indices))):
            raise _NotCells("labels index an axis other than the leading ones")
        for axis, index in enumerate(indices):
            if index not in candidates:
                raise _NotCells("an index that is not an integer vector of group labels")
            size = base.type.shape[axis]
            if size is None:
                size = int(base.shape[axis].eval())
            labels[index] = min(labels.get(index, size), int(size))
        seen[var] = True
        return True
    if isinstance(op, Elemwise):
        if isinstance(op.scalar_op, _DISCONTINUOUS) and any(_reads(i, binned) for i in node.inputs):
            raise _NotCells(
                f"a discontinuous function ({type(op.scalar_op).__name__}) of a covariate: its "
                "average over a bin is not what quadrature at two points gives"
            )
        parts = [
            _record_level(i, model, candidates, labels, seen, covariates, binned)
            for i in node.inputs
        ]
        for inp, part in zip(node.inputs, parts, strict=True):
            if not part and inp.ndim == var.ndim and inp.type.shape[0] != 1:
                raise _NotCells("a term with a leading axis that is not broadcast over records")
        seen[var] = any(parts)
        return seen[var]
    if _is_dot(op):
        left, right = node.inputs
        if var.ndim >= 1 and left.ndim == 2 and not _reads(right, reading):
            seen[var] = _record_level(left, model, candidates, labels, seen, covariates, binned)
            return seen[var]
        raise _NotCells("a matrix product that mixes records")
    if isinstance(op, DimShuffle):
        order = tuple(op.new_order)
        if order and order[0] == 0:
            seen[var] = _record_level(
                node.inputs[0], model, candidates, labels, seen, covariates, binned
            )
            return seen[var]
        if order and order[0] == "x" and _reads(node.inputs[0], reading):
            raise _NotCells("a reduction over the records (a sum or a mean across them)")
        raise _NotCells(f"a {op} that moves the record axis")
    if isinstance(op, Softmax | LogSoftmax):
        axis = op.axis
        axes = (axis,) if isinstance(axis, int) else tuple(axis or ())
        if var.ndim >= 2 and axes and all(a % var.ndim != 0 for a in axes):
            seen[var] = _record_level(
                node.inputs[0], model, candidates, labels, seen, covariates, binned
            )
            return seen[var]
        raise _NotCells("a softmax over the record axis")
    raise _NotCells(f"{type(op).__name__} between the labels or covariates and the parameter")


def _is_dot(op) -> bool:
    return isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot))


def _index_nodes(param: Variable) -> list:
    """Every advanced-indexing node under ``param``."""
    return [
        a.owner
        for a in ancestors([param])
        if a.owner is not None and isinstance(a.owner.op, AdvancedSubtensor)
    ]


def _label_candidates(param: Variable, model, n_records: int) -> set:
    """Integer data vectors of length ``n_records`` used as advanced indices under ``param``."""
    found = set()
    for a in ancestors([param]):
        node = a.owner
        if node is None or not isinstance(node.op, AdvancedSubtensor):
            continue
        for index in node.inputs[1:]:
            if (
                is_data(index, model)
                and index.ndim == 1
                and index.dtype.startswith(("int", "uint"))
                and _length(index) == n_records
            ):
                found.add(index)
    return found


def record_covariates(param: Variable, model, n_records: int) -> list[Variable]:
    """Data arrays under ``param`` with one row per record that are not group labels nor
    the sources of a computed index (per-record covariates: the parameter varies by record
    through them, not by cell)."""
    labels = _label_candidates(param, model, n_records)
    indices = [i for node in _index_nodes(param) for i in node.inputs[1:]]
    index_sources = set(ancestors(indices)) if indices else set()
    found = []
    for a in ancestors([param]):
        if a.owner is not None or a in labels or getattr(a.type, "ndim", 0) == 0:
            continue  # only leaves: data containers and constants
        if a in index_sources:
            continue  # an index computed from it: refused as such by cell_parameter
        if not is_data(a, model):
            continue
        if _length(a) == n_records:
            found.append(a)
    return found


def record_length(variable: Variable) -> int:
    """The length of ``variable``'s leading axis (static, or evaluated from public shapes)."""
    return _length(variable)


def _length(vector: Variable) -> int:
    size = vector.type.shape[0]
    return int(size) if size is not None else int(vector.shape[0].eval())


def _reads(var: Variable, candidates: set) -> bool:
    """Whether ``var`` reads one of the label arrays ``candidates``."""
    return bool(candidates) and any(a in candidates for a in ancestors([var]))
