"""Graph helpers shared by every recogniser: distributions, data values, indexing, readers.

Pure inspection of a PyMC model's graph; nothing here reads more than it returns and nothing
releases anything. :mod:`pymc_dp.analysis.inputs` classifies every array the model reads;
:mod:`pymc_dp.analysis.conjugate` and :mod:`pymc_dp.analysis.tempered` find the blocks each
mechanism handles with these helpers.
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
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError
from pymc_dp.families import RecordDomain
from pymc_dp.families.base import require_integers

__all__ = [
    "CONJUGATE_LIKELIHOODS",
    "LIKELIHOODS",
    "TRIALS_LIKELIHOODS",
    "check_conjugate_dependents",
    "distribution_name",
    "is_data",
    "likelihoods",
    "observed_children",
    "record_domain",
    "record_values",
    "reject_imputation",
    "rv_shape",
    "split_parameter",
    "variable_value",
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
    """Numeric value of a constant or shared (``pm.Data``) variable, *before* any cast.

    PyMC casts a float ``pm.Data`` container to the likelihood's integer dtype inside the
    graph (``Cast{int64}(y_data)``), which would turn a record of 0.5 into 0. Reading through
    the cast returns the values the user gave, so validation can refuse them. (A plain NumPy
    array is cast when the model is built; its original values are gone.)
    """
    variable = uncast(variable)
    if isinstance(variable, Constant):
        return np.asarray(variable.data)
    if isinstance(variable, SharedVariable):
        return np.asarray(variable.get_value(borrow=False))
    return np.asarray(variable.eval())


def rv_shape(model: pm.Model, rv: Variable) -> tuple[int, ...]:
    """Shape of random variable ``rv``: its static shape when the graph fixes every dimension
    (no compilation), else ``model.eval_rv_shapes()`` (compiles and evaluates the shapes)."""
    static = rv.type.shape
    if all(s is not None for s in static):
        return tuple(int(s) for s in static)
    return tuple(int(s) for s in model.eval_rv_shapes()[rv.name])


def record_values(variable: Variable, name: str, what: str) -> np.ndarray:
    """Values of records (observed values, group labels, per-record trials), read from the
    constant or ``pm.Data`` that holds them, through casts and dimension insertions only.

    A transformation of the records inside the graph (a cumulative sum, a comparison with a
    median, ...) would change the sensitivity the mechanism is calibrated for.

    Raises
    ------
    NonPrivateModelError
        If the records are computed in the graph. The message names the operation only.
    """
    leaf = variable
    while True:
        stripped = strip_expand_dims(uncast(leaf))
        if stripped is leaf:
            break
        leaf = stripped
    if not isinstance(leaf, Constant | SharedVariable):
        raise NonPrivateModelError(
            f"{name}: its {what} are computed in the model graph "
            f"({type(leaf.owner.op).__name__}); a transformation of the records changes what "
            "one record can move, so the mechanism's sensitivity would not hold. Compute them "
            "before building the model and pass an array or pm.Data. Nothing was released."
        )
    return variable_value(leaf)


def uncast(variable: Variable) -> Variable:
    """``variable`` with any elementwise dtype casts on top of it removed."""
    while (
        variable.owner is not None
        and isinstance(variable.owner.op, Elemwise)
        and isinstance(variable.owner.op.scalar_op, Cast)
    ):
        variable = variable.owner.inputs[0]
    return variable


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


def record_domain(likelihood, params, n_categories, max_trials, model, name) -> RecordDomain:
    """Declared domain of one record: categories and, for Binomial/Multinomial, trials.

    Raises
    ------
    NonPrivateModelError
        If the trials are random, or per-record (private) without a declared ``max_trials``.
    InvalidPrivateDataError
        If public scalar trials exceed the declared ``max_trials``.
    """
    if likelihood not in {"binomial", "multinomial"}:
        return RecordDomain(n_categories=n_categories)
    trials_var = params[0]
    if not is_data(trials_var, model):
        raise NonPrivateModelError(f"{name}: the number of trials must be data, not random")
    trials = variable_value(trials_var)
    if trials.size > 1:  # per-record trials are records
        trials = record_values(trials_var, name, "per-record trials")
    if trials.ndim == 0 or trials.size == 1:
        trials = int(require_integers(trials.reshape(()), name, "trials"))
        declared = trials if max_trials is None else int(max_trials)
        if trials > declared:
            raise InvalidPrivateDataError(
                f"{name}: {trials} trials exceed the declared max_trials={declared}"
            )
        return RecordDomain(n_categories, max_trials=declared, trials=trials)
    if max_trials is None:
        raise NonPrivateModelError(
            f"{name}: per-record trials are private data; declare their bound with "
            f"max_trials={{'{name}': M}} (a bound read off the data would leak it)"
        )
    trials = require_integers(trials.reshape(-1), name, "per-record trials")
    return RecordDomain(n_categories, max_trials=int(max_trials), trials=trials)


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
