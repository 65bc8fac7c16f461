"""Find the conjugate prior → observed-likelihood links of a PyMC model, or refuse.

A link is an observed variable whose likelihood is one of the supported families
(:data:`pymc_dp.families.FAMILIES`) and whose probability parameter is a Beta or Dirichlet
free variable, used directly (one group) or indexed by a constant integer vector of group
labels (``p[group]``, one row of statistics per group). Anything else that reads observed data
makes :func:`analyse_model` raise :class:`~pymc_dp.NonPrivateModelError`: pymc_dp never falls
back to a non-private sampler.

The privacy unit is one element of the observed vector (one row for a Multinomial), together
with its group label and, for Binomial/Multinomial likelihoods with per-record trials, its
number of trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pymc.distributions.truncated import TruncatedRV
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError
from pymc_dp.families import FAMILIES, ConjugateFamily, RecordDomain
from pymc_dp.families.base import reject_out_of_range, require_integers

__all__ = [
    "ConjugateLink",
    "analyse_model",
    "check_conjugate_dependents",
    "find_conjugate_link",
    "is_data",
    "observed_children",
    "record_domain",
    "refuse_readers_of_observed",
    "reject_imputation",
    "split_parameter",
    "variable_value",
]

_PRIORS = {"beta": pm.Beta, "dirichlet": pm.Dirichlet}
_LIKELIHOODS = {
    "bernoulli": pm.Bernoulli,
    "binomial": pm.Binomial,
    "categorical": pm.Categorical,
    "multinomial": pm.Multinomial,
}


@dataclass(frozen=True, eq=False)
class ConjugateLink:
    """An observed variable that a private conjugate mechanism can handle.

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
    """

    observed: str
    prior: str
    family: ConjugateFamily
    data: np.ndarray
    groups: np.ndarray | None
    n_groups: int
    domain: RecordDomain
    truncation: tuple[float, float] | None = None

    def validate(self) -> None:
        """Raise :class:`~pymc_dp.InvalidPrivateDataError` if any record is out of domain."""
        self.family.validate(self.data, self.domain, self.observed)
        if self.groups is not None:
            groups = require_integers(self.groups, self.observed, "group labels")
            reject_out_of_range(groups, 0, self.n_groups - 1, self.observed, "group labels")
            n_records = self.data.shape[0] if self.data.ndim else 1
            if groups.shape != (n_records,):
                raise InvalidPrivateDataError(
                    f"{self.observed}: {groups.shape[0]} group labels for {n_records} records"
                )


def _distribution(rv: Variable, table: Mapping[str, type]) -> str | None:
    if rv.owner is None:
        return None
    op = getattr(rv.owner.op, "base_rv_op", rv.owner.op)  # pm.Truncated wraps its base
    for name, dist in table.items():
        if isinstance(op, type(dist.rv_op)):
            return name
    return None


def _truncation(prior_rv: Variable) -> tuple[float, float] | None:
    """(lower, upper) of a ``pm.Truncated`` prior with constant bounds, else None."""
    if not isinstance(prior_rv.owner.op, TruncatedRV):
        return None
    lower, upper = (float(variable_value(v)) for v in prior_rv.owner.inputs[-2:])
    return lower, upper


def variable_value(variable: Variable) -> np.ndarray:
    """Numeric value of a constant or shared (``pm.Data``) variable."""
    if isinstance(variable, Constant):
        return np.asarray(variable.data)
    if isinstance(variable, SharedVariable):
        return np.asarray(variable.get_value(borrow=False))
    return np.asarray(variable.eval())


def is_data(variable: Variable, model: pm.Model) -> bool:
    """True if ``variable`` depends on no random variable (only constants and data)."""
    random = set(model.basic_RVs)
    return not any(a in random for a in ancestors([variable]))


def _strip_expand_dims(variable: Variable) -> Variable:
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
    param = _strip_expand_dims(param)
    node = param.owner
    if node is not None and isinstance(node.op, AdvancedSubtensor):
        if len(node.inputs) == 2 and is_data(node.inputs[1], model):
            return node.inputs[0], node.inputs[1]
        raise NonPrivateModelError(
            f"{observed}: its probability is indexed by something other than one constant "
            "vector of group labels"
        )
    return param, None


def find_conjugate_link(
    model: pm.Model, observed_rv: Variable, max_trials: int | None = None
) -> ConjugateLink:
    """Recognise the conjugate structure of one observed variable.

    Parameters
    ----------
    model : pm.Model
    observed_rv : TensorVariable
        An observed random variable of ``model``.
    max_trials : int, optional
        Declared largest number of trials per record (Binomial/Multinomial). Required when
        the trials are a per-record array; defaults to the trials when they are one public
        scalar.

    Raises
    ------
    NonPrivateModelError
        If the variable is not a supported likelihood with a Beta/Dirichlet parameter.
    """
    name = observed_rv.name
    likelihood = _distribution(observed_rv, _LIKELIHOODS)
    if likelihood is None:
        supported = ", ".join(f"{p}-{lik}" for p, lik in FAMILIES)
        raise NonPrivateModelError(
            f"{name}: {type(observed_rv.owner.op).__name__} likelihood has no private mechanism "
            f"here (supported conjugate pairs: {supported})"
        )
    params = observed_rv.owner.op.dist_params(observed_rv.owner)
    prob = params[-1]
    prior_rv, index = split_parameter(prob, model, name)
    prior = _distribution(prior_rv, _PRIORS)
    if prior is None or prior_rv not in model.free_RVs:
        raise NonPrivateModelError(
            f"{name}: the probability of its {likelihood} likelihood must be a Beta or Dirichlet "
            "free variable, used directly or indexed by group labels (p or p[group])"
        )
    family = FAMILIES.get((prior, likelihood))
    if family is None:
        raise NonPrivateModelError(f"{name}: a {prior} prior is not conjugate to a {likelihood}")
    shape = tuple(int(s) for s in model.eval_rv_shapes()[prior_rv.name])
    group_ndim = 1 if index is not None else 0
    event_ndim = 0 if prior == "beta" else 1
    if len(shape) != group_ndim + event_ndim:
        raise NonPrivateModelError(
            f"{name}: prior {prior_rv.name} has shape {shape}; expected "
            f"{'(groups,' if group_ndim else '('}{' categories' if event_ndim else ''}) "
            f"for {'indexed' if index is not None else 'direct'} use"
        )
    n_groups = shape[0] if group_ndim else 1
    n_categories = shape[-1] if event_ndim else 2
    domain = record_domain(likelihood, params, n_categories, max_trials, model, name)
    data = variable_value(model.rvs_to_values[observed_rv])
    if likelihood != "multinomial":
        data = data.reshape(-1)
    groups = variable_value(index).reshape(-1) if index is not None else None
    truncation = _truncation(prior_rv)
    return ConjugateLink(name, prior_rv.name, family, data, groups, n_groups, domain, truncation)


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
    return RecordDomain(n_categories, max_trials=int(max_trials), trials=trials.reshape(-1))


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


def refuse_readers_of_observed(model: pm.Model) -> None:
    """Refuse Deterministics, potentials or free variables computed from observed data.

    They would carry raw records (or exact likelihood terms) into the trace or into the
    samplers of the data-free model.
    """
    observed = set(model.observed_RVs)
    readers = [
        v.name
        for v in (*model.deterministics, *model.potentials, *model.free_RVs)
        if observed & set(ancestors([v]))
    ]
    if readers:
        raise NonPrivateModelError(
            f"{readers} are computed from observed (private) data: they would reach the trace "
            "or a non-private sampler. Remove them; compute such quantities from the released "
            "draws instead."
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


def analyse_model(
    model: pm.Model, max_trials: Mapping[str, int] | None = None
) -> dict[str, ConjugateLink]:
    """Links for every observed variable of ``model``, validated; or a refusal.

    Checks, in order: no imputed (NaN) observations; nothing else (Deterministic, potential,
    free variable) computed from observed data; every observed variable is a supported
    conjugate likelihood; every Beta/Dirichlet prior that feeds a likelihood feeds nothing
    else (no other random variable or potential depends on it), so that its conditional is
    exactly the conjugate posterior; every record lies in its declared domain.

    Returns
    -------
    dict
        Observed variable name → :class:`ConjugateLink`, in model order.

    Raises
    ------
    NonPrivateModelError, InvalidPrivateDataError
    """
    max_trials = dict(max_trials or {})
    reject_imputation(model)
    refuse_readers_of_observed(model)
    if not model.observed_RVs:
        raise NonPrivateModelError("the model has no observed variables: nothing is private")
    links = {
        rv.name: find_conjugate_link(model, rv, max_trials.pop(rv.name, None))
        for rv in model.observed_RVs
    }
    if max_trials:
        raise ValueError(f"max_trials names unknown observed variables: {sorted(max_trials)}")
    for prior_name in {link.prior for link in links.values()}:
        handled = {name for name, link in links.items() if link.prior == prior_name}
        check_conjugate_dependents(model, model[prior_name], handled)
    for link in links.values():
        link.validate()
    return links
