"""Default deny: classify every array a PyMC model reads, and refuse private reads.

Every graph input of the model — observed values, ``pm.Data`` containers, NumPy arrays that
PyMC turned into constants — is **private** unless it is declared public or is plainly not
a record. Private arrays may be read only by the mechanism that releases them (the blocks a
route handles: an observed likelihood with its group labels and trials, the HMM's count
tensor). A Deterministic, a Potential, a free variable's prior or an unhandled likelihood that
reads one is refused with :class:`~pymc_dp.NonPrivateModelError`, before anything is released
or charged.

Where the line is (and why):

* **private** — observed values; every ``pm.Data`` container not named in ``public``; every
  constant array holding two or more distinct values, wherever it is read (a prior, a
  Deterministic, a Potential, a likelihood's parameter, a size computation, the inner graph
  of a ``scan``, an ``OpFromGraph`` or a ``CustomDist``, or the log-density a ``CustomDist``'s
  ``logp`` builds). Such an array can hold one value per record; pymc_dp cannot tell a vector
  of prior means from a vector of covariates, so it asks you to say which.
* **design constant** (implicitly public) — a single number (``2.0``); a constant array that
  holds one number repeated (``np.ones(K)``, ``np.zeros(G)``) given directly as a free
  variable's distribution parameter and read by nothing else (a prior hyperparameter:
  ``pm.Dirichlet("w", a=np.ones(K))``); a literal shape given as a distribution's size; and an
  array of which only the shape is read (``x.shape``): n is public under replace-one (under
  add-remove-one n is private, so an array read only for its shape is private there). A
  repeated number anywhere else is private: records can all be equal (every label 0, every
  outcome 1), and a Deterministic reading such labels would publish them; whether an array
  is private never depends on its values. Shapes, sizes, dims and coords are
  public: never build them from the records (a shape of ``(n_positive,)`` releases a count).
  A dim that indexes records (a record axis of an observed variable) may have no coordinate
  values or the range 0..n − 1 only: its values are copied into the trace with every variable
  on that dim, so names or ids of the records are refused (:func:`refuse_record_coords`).
  A number computed from the records (an empirical prior mean, a data-derived σ) is a release
  pymc_dp cannot see: choose such numbers without the data, or release them with a mechanism.
* **public** — a ``pm.Data`` container named in ``public=[...]`` (the one documented way to
  declare an array public: informative per-group prior means, a public design matrix, ...).
  It may be read anywhere. Observed values cannot be declared public: they are the records
  every mechanism protects.

A likelihood handled by a mechanism may read only its records, its group labels and its
per-record trials; every other parameter (a Normal σ, a scalar number of trials) must be a
design constant or public, because it calibrates the mechanism. An opaque Python op
(``as_op``, ``wrap_py``) is refused: what it reads is invisible to the graph. Python closures
inside a custom ``Op`` subclass's ``perform`` are invisible too: do not close over records.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
from pytensor.compile.ops import FromFunctionOp
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_dp.errors import NonPrivateModelError, value_free_repr
from pymc_dp.graph.reading import (
    TRIALS_LIKELIHOODS,
    distribution_name,
    is_data,
    likelihoods,
    same_values,
    strip_expand_dims,
    variable_value,
)

__all__ = [
    "ModelInputs",
    "claimed_reads",
    "classify_inputs",
    "refuse_private_reads",
    "refuse_record_coords",
    "validate_public",
]

PRIVATE, PUBLIC, DESIGN = "private", "public", "design constant"
_FIX = (
    "If the array holds no information about individuals, wrap it as pm.Data('name', array) "
    "and pass public=['name'] to pymc_dp.sample; otherwise remove the variable and compute it "
    "from the released draws instead"
)


@value_free_repr
@dataclass(frozen=True, eq=False)
class ModelInputs:
    """Every array a model reads, classified, and which model variables read which.

    Attributes
    ----------
    kinds : dict
        Graph input → ``"private"``, ``"public"`` or ``"design constant"``.
    labels : dict
        Graph input → a description for messages (a name and a shape, never a value).
    readers : dict
        Model variable name → the graph inputs its own graph reads (up to other model
        variables), including ``observed:<name>`` reads of observed variables.
    """

    kinds: dict[Variable, str] = field(default_factory=dict)
    labels: dict[Variable, str] = field(default_factory=dict)
    readers: dict[str, set[Variable | str]] = field(default_factory=dict)

    @property
    def private(self) -> list[Variable]:
        return [v for v, kind in self.kinds.items() if kind == PRIVATE]

    def private_reads(self, name: str, exclude: Collection = ()) -> list[str]:
        """Descriptions of the private arrays model variable ``name`` reads directly, less
        those in ``exclude`` (the reads a mechanism releases)."""
        reads = set()
        for source in self.readers.get(name, ()):
            if isinstance(source, str) and source.startswith("opaque:"):
                reads.add(
                    f"an opaque Python op ({source.removeprefix('opaque:')}) whose reads "
                    "pymc_dp cannot see"
                )
            elif isinstance(source, str):
                reads.add(f"the observed values of {source.removeprefix('observed:')!r}")
            elif self.kinds.get(source) == PRIVATE and source not in exclude:
                reads.add(self.labels[source])
        return sorted(reads)


def validate_public(model: pm.Model, public: Iterable[str]) -> frozenset[str]:
    """Check the ``public`` declaration: names of ``pm.Data`` containers, none observed.

    Raises
    ------
    ValueError
        If a name is not a data container of the model.
    NonPrivateModelError
        If a declared container holds observed values.
    """
    public = frozenset(public or ())
    containers = {var.name for var in model.data_vars}
    unknown = sorted(public - containers)
    if unknown:
        raise ValueError(
            f"public names {unknown}, which are not pm.Data containers of the model "
            f"(containers: {sorted(containers)}). Declare a public array by wrapping it as "
            "pm.Data('name', array) and naming it in public=[...]"
        )
    observed_values = [model.rvs_to_values[rv] for rv in model.observed_RVs]
    holding_records = set(ancestors(observed_values))  # PyMC wraps observed data in a cast
    declared_observed = sorted(
        v.name for v in model.data_vars if v.name in public and v in holding_records
    )
    records = [  # the arrays the observed values are read from (under PyMC's cast)
        _value(a) for a in holding_records if isinstance(a, Constant | SharedVariable)
    ]
    declared_observed += sorted(
        v.name
        for v in model.data_vars
        if v.name in public
        and v.name not in declared_observed
        and any(np.size(r) > 1 and same_values(v.get_value(borrow=True), r) for r in records)
    )
    if declared_observed:
        raise NonPrivateModelError(
            f"{declared_observed} hold observed values, which are the private records every "
            "mechanism protects: they cannot be declared public. Nothing was released."
        )
    return public


def classify_inputs(
    model: pm.Model, public: Iterable[str] = (), neighbouring: str = "replace-one"
) -> ModelInputs:
    """Classify every graph input of ``model`` (see the module docstring for the line).

    Under ``neighbouring="add-remove-one"`` the number of records is private, so an array of
    which only the shape is read is private too (its length may be the number of records);
    under replace-one n is public and such an array is a design constant.

    Walks the graph of every free variable, observed variable, Deterministic and Potential
    (inner graphs included, stopping at other model variables), and the log-density of every
    free variable (a ``CustomDist``'s ``logp`` may close over arrays).

    Returns
    -------
    ModelInputs
    """
    public = validate_public(model, public)
    refuse_record_coords(model, neighbouring, public)
    data_names = {var: var.name for var in model.data_vars}
    dim_lengths = {length: dim for dim, length in model.dim_lengths.items()}
    observed_values = {model.rvs_to_values[rv]: rv.name for rv in model.observed_RVs}
    model_vars = {
        *model.free_RVs,
        *model.observed_RVs,
        *model.deterministics,
        *model.potentials,
        *model.value_vars,
    }
    observed = set(model.observed_RVs)
    free = set(model.free_RVs)
    hyperparameters: set[Variable] = set()
    uses: dict[Variable, set[str]] = {}
    read_by: dict[Variable, set[Variable]] = {}
    readers: dict[str, set[Variable | str]] = {}

    for var in (*model.free_RVs, *model.observed_RVs, *model.deterministics, *model.potentials):
        reads: set[Variable | str] = set()
        roots = [var]
        if var in observed:
            value = model.rvs_to_values[var]
            reads.add(value)
            uses.setdefault(value, set()).add("data")
        elif var in model.free_RVs:
            logp = model.logp(vars=[var], jacobian=False, sum=False)
            roots += logp
            hyperparameters |= _hyperparameters(var, logp, model_vars - {var})
        for source, role in _graph_inputs(roots, model_vars - {var}):
            if isinstance(source, str):
                reads.add(source)
            elif source in observed:
                reads.add(f"observed:{source.name}")
            elif source in model_vars:
                continue
            else:
                reads.add(source)
                uses.setdefault(source, set()).add(role)
                read_by.setdefault(source, set()).add(var)
        readers[var.name] = reads

    inputs = ModelInputs(readers=readers)
    for source, roles in uses.items():
        value = _value(source)
        shape = tuple(int(s) for s in np.shape(value))
        if source in observed_values:
            kind, label = PRIVATE, f"the observed values of {observed_values[source]!r}"
        elif source in data_names:
            name = data_names[source]
            kind = PUBLIC if name in public else PRIVATE
            label = f"pm.Data {name!r} (shape {shape})"
        elif source in dim_lengths:  # the length of a declared dimension (coords are public)
            kind, label = DESIGN, f"the length of dimension {dim_lengths[source]!r}"
        elif not isinstance(source, Constant):
            kind, label = PRIVATE, f"a shared array of shape {shape}"
        elif (
            "size" in roles
            or (roles <= {"shape"} and neighbouring == "replace-one")
            or np.size(value) <= 1
            or (
                source in hyperparameters
                and read_by.get(source, set()) <= free
                and _one_number(value)
            )
        ):
            kind, label = DESIGN, f"a constant of shape {shape}"
        else:
            kind, label = PRIVATE, f"a constant array of shape {shape}"
        inputs.kinds[source] = kind
        inputs.labels[source] = label
    return inputs


def record_dims(model: pm.Model, public: Iterable[str] = ()) -> dict[str, str]:
    """The dims that index records: ``{dim: observed variable}`` for every record axis of an
    observed variable (all its axes but a multivariate likelihood's support, e.g. a
    Multinomial's categories), and the leading dim of every private ``pm.Data`` container as
    long as an observed variable's records (group labels, covariates: one row per record)."""
    found: dict[str, str] = {}
    lengths: dict[int, str] = {}
    for rv in model.observed_RVs:
        dims = model.named_vars_to_dims.get(rv.name) or ()
        support = getattr(rv.owner.op, "ndim_supp", 0) if rv.owner is not None else 0
        for dim in dims[: len(dims) - support]:
            if dim is not None:
                found.setdefault(dim, rv.name)
        value = model.rvs_to_values[rv]
        length = _leading(value)
        if length is not None:
            lengths.setdefault(length, rv.name)
    public = set(public)
    for container in model.data_vars:
        dims = model.named_vars_to_dims.get(container.name) or ()
        if container.name in public or not dims or dims[0] is None:
            continue
        observed = lengths.get(_leading(container))
        if observed is not None:
            found.setdefault(dims[0], observed)
    return found


def refuse_record_coords(
    model: pm.Model, neighbouring: str = "replace-one", public: Iterable[str] = ()
) -> None:
    """Refuse coordinate values on a dim that indexes records (``record_dims``: an
    observed variable's, or a private container's with one row per record), other than
    0..n − 1; under add-remove-one, refuse any variable but the observed ones on such a dim.

    The values of a model's coords are copied into the trace for every variable on the dim
    (a record-indexed Deterministic, the observed data), unnoised: names, ids or dates of the
    records would be published. A record dim may have no coordinate values
    (``model.add_coord(dim, length=n)``) or the range 0..n − 1, which says nothing but n
    (public under replace-one). Under add-remove-one n itself is private: a free variable,
    Deterministic or Potential on a record dim would carry it into the trace as the dim's
    length, so it is refused.

    Raises
    ------
    NonPrivateModelError
        Naming the dim and the observed variable it indexes, never a value.
    """
    dims_of = record_dims(model, public)
    if neighbouring == "add-remove-one":
        for var in (*model.free_RVs, *model.deterministics, *model.potentials):
            on = [d for d in model.named_vars_to_dims.get(var.name) or () if d in dims_of]
            if on:
                raise NonPrivateModelError(
                    f"{var.name!r} is on dim {on[0]!r}, which indexes the records of "
                    f"{dims_of[on[0]]!r}: under neighbouring='add-remove-one' the number of "
                    "records is private, and the dim's length would reach the trace. Compute "
                    "per-record quantities from the released draws instead. Nothing was "
                    "released."
                )
    for dim, observed in dims_of.items():
        values = model.coords.get(dim)
        if values is None:
            continue
        array = np.asarray(values)
        if array.dtype.kind in "iu" and np.array_equal(array, np.arange(array.size)):
            continue
        raise NonPrivateModelError(
            f"dim {dim!r} indexes the records of {observed!r} (one value per record), but its "
            "coordinate values are "
            f"not 0..n-1 ({array.size} values): they would be copied into the trace unnoised. "
            f"Give no values (model.add_coord({dim!r}, length=n)) or range(n). Nothing was "
            "released."
        )


def refuse_private_reads(
    model: pm.Model,
    inputs: ModelInputs,
    handled: Collection[str],
    claims: Mapping[str, Iterable[Variable]] | None = None,
) -> None:
    """Refuse every model variable that reads a private array outside a mechanism.

    ``handled`` names the variables a mechanism releases: the observed likelihoods of the
    route's blocks (each may read its own records, group labels and per-record trials, and
    nothing else private: :func:`~pymc_dp.analysis.inputs.claimed_reads`), and the HMM's
    cell potential (built by pymc_dp from the count tensor). ``claims`` adds, per handled
    likelihood, other graph inputs its mechanism releases (a regression's covariates).
    Everything else — free variables (their priors and log-densities), Deterministics,
    Potentials, other likelihoods — must read only public arrays and design constants.

    Raises
    ------
    NonPrivateModelError
        Naming each offending variable, what private array it reads (a name and a shape,
        never a value) and the fix.
    """
    offenders = {}
    observed = set(model.observed_RVs)
    for var in (*model.free_RVs, *model.deterministics, *model.potentials, *model.observed_RVs):
        claimed: set = set()
        if var.name in handled:
            if var not in observed:
                continue  # the HMM's own potential
            claimed = claimed_reads(model, var)
            extra = list((claims or {}).get(var.name, ()))
            claimed |= set(extra)
            claimed |= {a for a in ancestors(extra) if isinstance(a, Constant | SharedVariable)}
        reads = inputs.private_reads(var.name, exclude=claimed)
        if reads:
            offenders[var.name] = reads
    if offenders:
        detail = "; ".join(f"{name!r} reads {', '.join(r)}" for name, r in offenders.items())
        raise NonPrivateModelError(
            f"{detail}. These variables would carry private records into the trace, into a "
            f"non-private sampler or into a mechanism's calibration. {_FIX}. "
            "Nothing was released."
        )


def claimed_reads(model: pm.Model, rv: Variable) -> set[Variable]:
    """The graph inputs a mechanism releases for observed ``rv``: its records, the group
    labels indexing its parameter, and its per-record trials (Binomial/Multinomial).

    This only excuses the likelihood's own reads of them. Every recogniser reads each of them
    from its container used as is (:func:`pymc_dp.graph.reading.require_as_is`), and refuses
    a computed form (a cast, a scaling, ...) naming it, before anything is released. The
    trials are per-record when the number of trials the likelihood computes is an array (a
    single number is a calibration parameter: it must be public or a design constant).
    """
    sources = [model.rvs_to_values[rv]]
    n_records = _leading(sources[0])
    params = rv.owner.op.dist_params(rv.owner)
    for param in params:
        param = strip_expand_dims(param)
        if param.owner is not None and isinstance(param.owner.op, AdvancedSubtensor):
            # group labels: one per record (an index of another length is not a label); the
            # length of records in a Dask collection is not known here (their recognisers
            # take only containers used as is, and refuse Dask records read per cell)
            sources += [
                i for i in param.owner.inputs[1:] if not n_records or _leading(i) == n_records
            ]
    has_trials = distribution_name(rv, likelihoods(TRIALS_LIKELIHOODS)) is not None
    if has_trials and is_data(params[0], model) and _size(params[0]) > 1:
        sources.append(params[0])
    claimed = set(sources)
    claimed |= {a for a in ancestors(sources) if isinstance(a, Constant | SharedVariable)}
    return claimed


def _graph_inputs(roots: list[Variable], stop: set[Variable]):
    """(input, role) for every leaf of the graphs of ``roots``, stopping at model variables.

    Roles: ``"data"`` for parameters and expressions; ``"size"`` for a constant given
    directly as a random variable's size (a literal shape); ``"shape"`` for an array of which
    only the shape is read. Inner graphs (scan, OpFromGraph, CustomDist) are walked; their
    constants are leaves too. An opaque Python op yields ``"opaque:<op>"``.
    """
    seen: set[tuple[Variable, str]] = set()  # by role: a leaf may be read in several ways
    stack: list[tuple[Variable, str]] = [(root, "root") for root in roots]
    while stack:
        current, role = stack.pop()
        if (current, role) in seen:
            continue
        seen.add((current, role))
        if role != "root" and current in stop:
            yield current, role
            continue
        if isinstance(current.type, RandomType):
            continue
        if isinstance(current, Constant | SharedVariable):
            yield current, "data" if role == "root" else role
            continue
        node = current.owner
        if node is None:
            continue
        role = "data" if role == "root" else role
        if isinstance(node.op, FromFunctionOp):
            yield f"opaque:{node.op}", role
            continue
        if isinstance(node.op, Shape | Shape_i):
            stack.extend((i, "shape") for i in node.inputs)
            continue
        if isinstance(node.op, RandomVariable):
            size = node.op.size_param(node)
            stack.extend((p, role) for p in node.op.dist_params(node))
            if size is not None:
                stack.append((size, "size" if isinstance(size, Constant) else role))
        else:
            stack.extend((i, role) for i in node.inputs)
        if isinstance(node.op, HasInnerGraph):
            inner = node.op.inner_inputs
            stack.extend(
                (leaf, role)
                for leaf in ancestors(node.op.inner_outputs)
                if isinstance(leaf, Constant) and leaf not in inner
            )


def _hyperparameters(rv: Variable, logp: list[Variable], stop: set[Variable]) -> set[Variable]:
    """Constants free variable ``rv`` reads only as its prior's hyperparameters: given
    directly (up to broadcasting dims) as a distribution parameter, or appearing only in its
    log-density ``logp`` (where PyTensor folds such parameters into new constants), never
    through an expression or an index of the variable's own graph."""
    if rv.owner is None or not isinstance(rv.owner.op, RandomVariable):
        return set()
    params = (strip_expand_dims(p) for p in rv.owner.op.dist_params(rv.owner))
    direct = {p for p in params if isinstance(p, Constant)}
    in_graph = {c for c, _ in _graph_inputs([rv], stop) if isinstance(c, Constant)}
    in_logp = {c for c, _ in _graph_inputs(logp, stop) if isinstance(c, Constant)}
    return direct | (in_logp - in_graph)


def _one_number(value) -> bool:
    """True when the array holds a single number (possibly repeated)."""
    flat = np.asarray(value).reshape(-1)
    return flat.size <= 1 or bool(np.all(flat == flat[0]))


def _leading(variable: Variable) -> int | None:
    """Length of a data graph's first axis (None for a scalar or a graph of random
    variables)."""
    if variable.type.ndim == 0:
        return None
    if variable.type.shape[0] is not None:
        return int(variable.type.shape[0])
    try:
        return int(np.shape(variable_value(variable))[0])
    except Exception:  # not a data graph: no length to compare
        return None


def _size(variable: Variable) -> int:
    """Number of elements of a data graph: static when the graph fixes it, else evaluated."""
    if all(s is not None for s in variable.type.shape):
        return int(np.prod(variable.type.shape, dtype=np.int64))
    return int(np.size(variable_value(variable)))


def _value(variable: Variable):
    if isinstance(variable, Constant):
        return variable.data
    if isinstance(variable, SharedVariable):
        return variable.get_value(borrow=True)
    return np.asarray(0.0)
