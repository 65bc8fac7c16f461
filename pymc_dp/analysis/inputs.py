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
  array with more than one element used outside a prior (group labels, per-record trials,
  covariates, constants in Deterministics, Potentials and likelihoods); any array, even in a
  prior, that has an axis as long as an observed variable's records (it may hold one value
  per record, e.g. a random effect centred on a private covariate).
* **hyperparameter** (implicitly public) — an array that is read only by the distributions of
  free variables (priors) and has no axis as long as the records: concentrations of shape
  (K,), per-group prior means of shape (G,), ... They are the base measure of every mechanism
  here and are assumed chosen without looking at the records.
* **design constant** (implicitly public) — a single number (size 1), and the shape and size
  arguments of distributions: one number cannot hold one value per record. A number computed
  from the records (an empirical prior mean, a data-derived σ) is a release that pymc_dp
  cannot see: choose such numbers without the data, or release them with a mechanism.
* **public** — a ``pm.Data`` container named in ``public=[...]`` (the one documented way to
  declare an array public). It may be read anywhere. Observed values cannot be declared
  public: they are the records every mechanism protects.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType

from pymc_dp.errors import NonPrivateModelError

__all__ = ["ModelInputs", "classify_inputs", "refuse_private_reads", "validate_public"]

PRIVATE, PUBLIC, HYPERPARAMETER, DESIGN = "private", "public", "hyperparameter", "design constant"
_FIX = (
    "If the array holds no information about individuals, wrap it as pm.Data('name', array) "
    "and pass public=['name'] to pymc_dp.sample; otherwise remove the variable and compute it "
    "from the released draws instead"
)


@dataclass(frozen=True, eq=False)
class ModelInputs:
    """Every array a model reads, classified, and which model variables read which.

    Attributes
    ----------
    kinds : dict
        Graph input → ``"private"``, ``"public"``, ``"hyperparameter"`` or
        ``"design constant"``.
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

    def private_reads(self, name: str) -> list[str]:
        """Descriptions of the private arrays model variable ``name`` reads directly."""
        reads = []
        for source in self.readers.get(name, ()):
            if isinstance(source, str):
                reads.append(f"the observed values of {source.removeprefix('observed:')!r}")
            elif self.kinds.get(source) == PRIVATE:
                reads.append(self.labels[source])
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
    if declared_observed:
        raise NonPrivateModelError(
            f"{declared_observed} hold observed values, which are the private records every "
            "mechanism protects: they cannot be declared public. Nothing was released."
        )
    return public


def classify_inputs(model: pm.Model, public: Iterable[str] = ()) -> ModelInputs:
    """Classify every graph input of ``model`` (see the module docstring for the line).

    Walks the graph of every free variable, observed variable, Deterministic and Potential,
    stopping at other model variables. A free variable's distribution parameters are *prior*
    reads; everything else (Deterministics, Potentials, likelihoods) is a *data* read.

    Returns
    -------
    ModelInputs
    """
    public = validate_public(model, public)
    data_names = {var: var.name for var in model.data_vars}
    observed_values = {model.rvs_to_values[rv]: rv.name for rv in model.observed_RVs}
    record_lengths = {
        int(np.shape(_value(value))[0])
        for value in observed_values
        if np.ndim(_value(value)) >= 1 and np.shape(_value(value))[0] > 1
    }
    model_vars = {
        *model.free_RVs,
        *model.observed_RVs,
        *model.deterministics,
        *model.potentials,
    }
    observed = set(model.observed_RVs)
    uses: dict[Variable, set[str]] = {}
    readers: dict[str, set[Variable | str]] = {}

    for var in (*model.free_RVs, *model.observed_RVs, *model.deterministics, *model.potentials):
        role = "prior" if var in model.free_RVs else "data"
        reads: set[Variable | str] = set()
        if var in observed:
            value = model.rvs_to_values[var]
            reads.add(value)
            uses.setdefault(value, set()).add("data")
        for source, source_role in _graph_inputs(var, model_vars, role):
            if source in observed:
                reads.add(f"observed:{source.name}")
                continue
            reads.add(source)
            uses.setdefault(source, set()).add(source_role)
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
        elif roles == {"structure"} or np.size(value) <= 1:
            kind, label = DESIGN, f"a constant of shape {shape}"
        elif roles <= {"prior", "structure"} and not set(shape) & record_lengths:
            kind, label = HYPERPARAMETER, f"a prior parameter of shape {shape}"
        else:
            kind, label = PRIVATE, f"a constant array of shape {shape}"
        inputs.kinds[source] = kind
        inputs.labels[source] = label
    return inputs


def refuse_private_reads(
    model: pm.Model, inputs: ModelInputs, handled: Collection[str]
) -> None:
    """Refuse every model variable outside ``handled`` that reads a private array.

    ``handled`` names the variables whose private reads a mechanism releases (the observed
    likelihoods of the route's blocks, the HMM's cell potential). Everything else — free
    variables (their priors), Deterministics, Potentials, other likelihoods — must read
    only public arrays, hyperparameters and design constants.

    Raises
    ------
    NonPrivateModelError
        Naming each offending variable, what private array it reads (a name and a shape,
        never a value) and the fix.
    """
    offenders = {}
    for var in (*model.free_RVs, *model.deterministics, *model.potentials, *model.observed_RVs):
        if var.name in handled:
            continue
        reads = inputs.private_reads(var.name)
        if reads:
            offenders[var.name] = reads
    if offenders:
        detail = "; ".join(f"{name!r} reads {', '.join(r)}" for name, r in offenders.items())
        raise NonPrivateModelError(
            f"{detail}. These variables would carry private records into the trace or into a "
            f"non-private sampler. {_FIX}. Nothing was released."
        )


def _graph_inputs(var: Variable, stop: set[Variable], role: str):
    """(input, role) for every leaf of ``var``'s own graph, stopping at model variables.

    Roles: ``role`` for distribution parameters and expressions, ``"structure"`` for the
    size argument and random generators of a random variable.
    """
    seen: set[Variable] = set()
    stack: list[tuple[Variable, str]] = []
    node = var.owner
    if node is None:
        return
    stack.extend(_node_inputs(node, role))
    while stack:
        current, current_role = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in stop:
            yield current, current_role
            continue
        if isinstance(current.type, RandomType):
            continue
        if isinstance(current, Constant | SharedVariable) or current.owner is None:
            if isinstance(current, Constant | SharedVariable):
                yield current, current_role
            continue
        stack.extend(_node_inputs(current.owner, current_role))


def _node_inputs(node, role: str) -> list[tuple[Variable, str]]:
    if isinstance(node.op, RandomVariable):
        size = node.op.size_param(node)
        params = node.op.dist_params(node)
        out = [(p, role) for p in params]
        if size is not None:
            out.append((size, "structure"))
        return out
    return [(i, role) for i in node.inputs]


def _value(variable: Variable):
    if isinstance(variable, Constant):
        return variable.data
    if isinstance(variable, SharedVariable):
        return variable.get_value(borrow=True)
    return np.asarray(0.0)
