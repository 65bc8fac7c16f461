"""Graph helpers shared by every recogniser: distributions, data values, indexing, readers.

Pure inspection of a PyMC model's graph; nothing here reads more than it returns and nothing
releases anything. :mod:`pymc_dp.analysis.inputs` classifies every array the model reads;
:mod:`pymc_dp.analysis.conjugate` and :mod:`pymc_dp.analysis.tempered` find the blocks each
mechanism handles with these helpers, and every bounded family recognises its own
likelihoods with them (:meth:`pymc_dp.families.bounded.BoundedFamily.recognise`).

**Records are read as is** (:func:`require_as_is`, the one rule every recogniser applies,
through :func:`record_values`): a likelihood's observed values, its group labels, its
per-record trials and a regression's covariates must be the constant array or ``pm.Data``
container itself. The statistics are computed from the container's values, so a cast (an
``int8`` cast wraps 200 to -56), scaling, slice or any other transformation between the
container and the likelihood would release statistics of other values than the likelihood
reads: a posterior for a different model than the one written. The one wrapper let through
is the cast PyMC itself puts on observed values, to the likelihood's dtype, directly on the
container, when it changes no value that passes validation.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.scalar.basic import Cast
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError

__all__ = [
    "CONJUGATE_LIKELIHOODS",
    "LIKELIHOODS",
    "OBSERVED",
    "RECORDS_TAG",
    "TRIALS_LIKELIHOODS",
    "check_conjugate_dependents",
    "dask_records",
    "describe_graph",
    "deterministic_of",
    "distribution_name",
    "is_data",
    "likelihoods",
    "observed_children",
    "record_values",
    "reject_imputation",
    "require_as_is",
    "rv_shape",
    "same_values",
    "split_parameter",
    "strip_expand_dims",
    "unsupported_likelihood",
    "variable_value",
    "wrapped_parameter",
]


LIKELIHOODS: dict[str, type] = {
    "bernoulli": pm.Bernoulli,
    "binomial": pm.Binomial,
    "categorical": pm.Categorical,
    "multinomial": pm.Multinomial,
    "poisson": pm.Poisson,
    "normal": pm.Normal,
}
"""Every likelihood some mechanism handles, by the name the families and messages use."""
CONJUGATE_LIKELIHOODS = ("bernoulli", "binomial", "categorical", "multinomial")
"""The likelihoods of the Laplace statistics (Beta/Dirichlet conjugate pairs)."""
TRIALS_LIKELIHOODS = ("binomial", "multinomial")
"""Likelihoods whose first parameter is a number of trials."""
RECORDS_TAG = "pymc_dp_records"
"""The tag attribute under which a :func:`pymc_dp.Data` container keeps its Dask handle."""


def dask_records(variable):
    """The :class:`~pymc_dp.records.DaskRecords` a container stands for, or None (an
    in-memory array)."""
    if not isinstance(variable, SharedVariable):
        return None
    return getattr(variable.tag, RECORDS_TAG, None)


OBSERVED = "observed values"
"""What a likelihood's records are called in messages; the one role that may carry PyMC's
cast (:func:`require_as_is`)."""


def likelihoods(names) -> dict[str, type]:
    """The sub-table of :data:`LIKELIHOODS` for ``names``."""
    return {name: LIKELIHOODS[name] for name in names}


def distribution_name(rv: Variable, table: Mapping[str, type]) -> str | None:
    if rv.owner is None:
        return None
    op = getattr(rv.owner.op, "base_rv_op", rv.owner.op)  # pm.Truncated wraps its base
    for name, dist in table.items():
        if isinstance(op, type(dist.rv_op)):
            return name
    return None


def variable_value(variable: Variable) -> np.ndarray:
    """Numeric value of a data graph (constants and ``pm.Data`` only), as the model computes
    it: a constant's or a container's value, else the graph evaluated, casts included.

    Records are not read with this: :func:`record_values` reads them from their container,
    used as is (a float container under PyMC's cast to integer counts is read before the
    cast, so validation can refuse a record of 0.5 that the cast would make 0).
    """
    if isinstance(variable, Constant):
        return np.asarray(variable.data)
    if isinstance(variable, SharedVariable):
        return np.asarray(variable.get_value(borrow=False))
    return np.asarray(variable.eval())


def same_values(a, b) -> bool:
    """Whether two arrays hold the same values in the same shape (a copy of the same records,
    or one NumPy array wrapped twice as graph constants). Compares private values: the
    answer is used to refuse or accept a model, never printed."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def rv_shape(model: pm.Model, rv: Variable) -> tuple[int, ...]:
    """Shape of random variable ``rv``: its static shape when the graph fixes every dimension
    (no compilation), else ``model.eval_rv_shapes()`` (compiles and evaluates the shapes)."""
    static = rv.type.shape
    if all(s is not None for s in static):
        return tuple(int(s) for s in static)
    return tuple(int(s) for s in model.eval_rv_shapes()[rv.name])


def record_values(variable: Variable, name: str, what: str) -> np.ndarray:
    """Values of records (observed values, group labels, per-record trials, covariates), read
    from the constant or ``pm.Data`` container the likelihood reads as is
    (:func:`require_as_is`; for ``what == OBSERVED``, also under PyMC's own cast).

    Raises
    ------
    NonPrivateModelError
        If the records are computed in the graph (a cast, a scaling, a cumulative sum, a
        comparison with a median, ...). The message names the operations only.
    """
    container = require_as_is(variable, name, what)
    handle = dask_records(container)
    if handle is not None:  # records in a Dask collection: read by pymc_dp.records only
        if np.size(container.get_value(borrow=True)):
            raise NonPrivateModelError(
                f"{name}: the pymc_dp.Data container {container.name!r} was given values "
                "(pm.set_data?), but its records are read from its Dask collection only: make a "
                "new pymc_dp.Data for other records. Nothing was released."
            )
        return handle
    return variable_value(container)


def require_as_is(variable: Variable, name: str, what: str) -> Variable:
    """The constant or shared (``pm.Data``) array ``variable`` is, or a refusal.

    For the observed values (``what == OBSERVED``), also the one cast PyMC puts on them (to
    the likelihood's dtype, directly on the container) when it changes no value that passes
    validation: a safe (widening) cast, or a float-to-integer cast (every integer-valued
    likelihood refuses records that are not whole numbers in its declared domain). PyMC puts
    no cast on group labels, per-record trials or covariates: there any cast was written in
    the model. Anything else — a cast written in the model (PyMC then wraps it in casts of
    its own: a chain), a scaling, slice, power, join or comparison — would make the
    statistics (computed from the container's values) describe other values than the
    likelihood reads; even a value-preserving one is refused (default deny).

    Returns
    -------
    Variable
        The container (a ``Constant`` or ``SharedVariable``).

    Raises
    ------
    NonPrivateModelError
        Naming the observed variable, the role and the operations found (never a value).
    """
    if isinstance(variable, Constant | SharedVariable):
        return variable
    if what == OBSERVED and _is_cast(variable):
        inner = variable.owner.inputs[0]
        source, target = np.dtype(inner.dtype), np.dtype(variable.dtype)
        exact = np.can_cast(source, target, casting="safe") or (
            source.kind == "f" and target.kind in "iu"
        )
        if isinstance(inner, Constant | SharedVariable) and exact:
            return inner
    raise NonPrivateModelError(
        f"{name}: its {what} are computed in the model graph: the {what} of {name!r} must be "
        f"an array or a pm.Data container used as is; found {describe_graph(variable)}. The "
        f"statistics are computed from the container's values, so a cast, scaling, slice or "
        f"other transformation would release statistics of other {what} than the likelihood "
        "reads (a posterior for a different model). Compute them before building the model "
        "and pass the result as an array or pm.Data. Nothing was released."
    )


def _is_cast(variable: Variable) -> bool:
    node = variable.owner
    return (
        node is not None and isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Cast)
    )


def describe_graph(variable: Variable, depth: int = 4, top: bool = True) -> str:
    """The operations of a graph, e.g. ``Cast{int64}(X)``: op and container names only.

    Constants are shown as ``constant`` (a constant array may hold records), random variables
    and other inputs by their names; below ``depth`` levels, ``...``.
    """
    if isinstance(variable, Constant):
        return "constant"
    if isinstance(variable, SharedVariable):
        return variable.name or "shared array"
    node = variable.owner
    if node is None or (not top and isinstance(node.op, RandomVariable)):
        return variable.name or "input"
    op = node.op
    label = str(op) if isinstance(op, Elemwise | DimShuffle) else type(op).__name__
    if depth <= 1:
        return f"{label}(...)"
    inputs = ", ".join(
        describe_graph(strip_expand_dims(i), depth - 1, top=False) for i in node.inputs
    )
    return f"{label}({inputs})"


def unsupported_likelihood(
    name: str, found: str, route: str, patterns: tuple[str, ...]
) -> NonPrivateModelError:
    """The refusal of a likelihood that no pattern of ``route`` takes.

    ``found`` says what the model has (distribution and op names, variable names: never a
    value); ``patterns`` is the route's table of what its recogniser accepts
    (:data:`pymc_dp.families.LAPLACE_PATTERNS`,
    :data:`pymc_dp.analysis.tempered.TEMPERED_PATTERNS`), listed as is.
    """
    return NonPrivateModelError(
        f"{name}: unsupported likelihood: {found}. {route} take only: {'; '.join(patterns)}. "
        "Any other likelihood has no private mechanism here (it is not a question of declaring "
        "data public). Nothing was released."
    )


def deterministic_of(variable: Variable, model: pm.Model) -> Variable | None:
    """The ``pm.Deterministic`` of ``model`` that ``variable`` is (broadcast dimensions
    aside), else None."""
    variable = strip_expand_dims(variable)
    return variable if variable in model.deterministics else None


def wrapped_parameter(name: str, role: str, deterministic: Variable) -> NonPrivateModelError:
    """The refusal of a likelihood whose ``role`` (its probability, mean, rate) is a
    ``pm.Deterministic``: say to remove it, and why."""
    inner = deterministic.owner.inputs[0] if deterministic.owner is not None else None
    if inner is not None and inner.name:
        wrapped = inner.name
    else:
        wrapped = (
            "its value" if inner is None else f"the expression it wraps ({describe_graph(inner)})"
        )
    return NonPrivateModelError(
        f"{name}: its {role} is the pm.Deterministic {deterministic.name!r}; remove the "
        f"Deterministic from the likelihood and pass {wrapped} to it directly. The recogniser "
        "matches a likelihood's parameter to the graph its mechanism is for (the prior's free "
        "variable itself, p or p[group], or X @ beta + alpha) and does not look through a "
        "Deterministic, even one that only renames the parameter. A Deterministic of the "
        "parameter may stay in the model beside the likelihood (it is computed from the "
        "released draws). Nothing was released."
    )


def is_data(variable: Variable, model: pm.Model) -> bool:
    """True if ``variable`` depends on no random variable (only constants and data)."""
    random = set(model.basic_RVs)
    return not any(a in random for a in ancestors([variable]))


def strip_expand_dims(variable: Variable) -> Variable:
    """Remove broadcast-only dimension insertions (values unchanged) that PyMC adds."""
    while variable.owner is not None and isinstance(variable.owner.op, DimShuffle):
        order = [axis for axis in variable.owner.op.new_order if axis != "x"]
        if order != list(range(variable.owner.inputs[0].ndim)):
            break
        variable = variable.owner.inputs[0]
    return variable


def split_parameter(param: Variable, model: pm.Model, observed: str):
    """(prior_rv, group_index_variable_or_None) for a likelihood's parameter: p or p[group].

    Raises
    ------
    NonPrivateModelError
        If the parameter is indexed by anything but one constant vector of group labels.
    """
    param = strip_expand_dims(param)
    node = param.owner
    if node is not None and isinstance(node.op, AdvancedSubtensor):
        if len(node.inputs) == 2 and is_data(node.inputs[1], model):
            return node.inputs[0], node.inputs[1]
        raise NonPrivateModelError(
            f"{observed}: its probability is indexed by something other than one constant "
            "vector of group labels"
        )
    return param, None


def reject_imputation(model: pm.Model) -> None:
    observed = {rv.name for rv in model.observed_RVs}
    for rv in model.free_RVs:
        if rv.name.endswith("_unobserved") and rv.name[: -len("_unobserved")] + "_observed" in (
            observed
        ):
            base = rv.name[: -len("_unobserved")]
            raise InvalidPrivateDataError(
                f"{base}: observed data contain NaN/missing values, which PyMC would impute. "
                "Private records must be complete and in domain: drop or recode them before "
                "building the model. Nothing was released."
            )


def observed_children(model: pm.Model, prior_rv: Variable) -> list[Variable]:
    """Observed variables whose distribution depends on ``prior_rv``."""
    return [o for o in model.observed_RVs if prior_rv in ancestors([o])]


def check_conjugate_dependents(model: pm.Model, prior_rv: Variable, handled: set[str]) -> None:
    """Raise unless only the ``handled`` likelihoods depend on ``prior_rv``.

    Then the conditional posterior of ``prior_rv`` is exactly the conjugate update of those
    likelihoods (Deterministics do not count: they add no density).
    """
    others = [
        v.name
        for v in (*model.free_RVs, *model.observed_RVs, *model.potentials)
        if v is not prior_rv and v.name not in handled and prior_rv in ancestors([v])
    ]
    if others:
        raise NonPrivateModelError(
            f"{prior_rv.name}: also feeds {others}, so its conditional posterior is not the "
            "conjugate update of its private likelihoods"
        )
