"""Recognise a PyMC model that can be sampled privately at temperature T, or refuse it.

Posterior-sampling mechanisms (one posterior sample, exponential-mechanism Gibbs, private
Metropolis; Foulds et al. 2016, §3.1 eq. 10–15, §4.1 eq. 19–20, App. C.1) need a bound Δ on
how much one record can change the log-likelihood (eq. 9, 13). Δ is finite only when the
parameters are truncated and, for counts and continuous data, the data are bounded. This
module finds, for every observed variable, its *block*: the truncated prior it reads,
directly (``θ``) or by a constant vector of group labels (``θ[group]``), and computes Δ_v
in closed form (its *log-likelihood bound*, :mod:`pymc_dp.families.bounds`). The exact
sufficient statistics of each block are kept for the samplers; they are private and are never
put into a model graph.

Supported likelihoods, the truncated prior each needs, and the record bound to declare:

* Bernoulli, Binomial(n): ``TruncatedBeta`` or ``pm.Truncated(pm.Beta.dist(...))``; for
  per-record (private) trials, ``max_trials``.
* Categorical(K), Multinomial(n, K): :class:`~pymc_dp.distributions.TruncatedDirichlet`
  (constant α); ``max_trials`` as above.
* Poisson: ``pm.Truncated(pm.Gamma.dist(...))``; ``data_bounds`` (m, M) on the counts.
* Normal(μ, σ) with σ constant: ``pm.TruncatedNormal`` or ``pm.Truncated(pm.Normal...)``;
  ``data_bounds`` (a, b) on the values.

The privacy unit is one element of every observed vector (with its group label and trials),
as on the Laplace path: one person may appear in every observed variable, so a record's Δ is
the sum of the Δ_v, unless observed variables are declared ``disjoint`` (they hold different
people, by a public split), in which case they compose in parallel (McSherry 2009; Foulds et
al. 2016, §4.1). Group labels are private, so a replaced record may also change group; Δ_v
then covers scoring x and x' under two different parameters (``grouped=True`` bounds).

Free variables that are not blocks (e.g. hyperpriors of a block's prior) are allowed when no
observed variable reads them except through its block: given the blocks, their conditional
does not depend on the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pymc as pm
from pymc.distributions.continuous import TruncatedNormalRV
from pymc.distributions.truncated import TruncatedRV
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_dp.analysis.conjugate import record_domain
from pymc_dp.analysis.inputs import ModelInputs, classify_inputs, refuse_private_reads
from pymc_dp.distributions import TruncatedDirichletRV
from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError, value_free_repr
from pymc_dp.families import FAMILIES, group_sums
from pymc_dp.families.base import reject_out_of_range, require_integers
from pymc_dp.families.gamma import poisson_tempered_statistics
from pymc_dp.families.normal import normal_tempered_statistics
from pymc_dp.graph.reading import (
    LIKELIHOODS,
    check_conjugate_dependents,
    describe_graph,
    deterministic_of,
    distribution_name,
    is_data,
    record_values,
    reject_imputation,
    require_as_is,
    same_values,
    split_parameter,
    unsupported_likelihood,
    variable_value,
    wrapped_parameter,
)
from pymc_dp.ledger import compose

__all__ = [
    "LIKELIHOOD_PRIORS",
    "TEMPERED_PATTERNS",
    "BoundedLikelihood",
    "TemperedBlock",
    "TemperedModel",
    "analyse_tempered_model",
    "prior_parameter_variables",
]

LIKELIHOOD_PRIORS: dict[str, str] = {
    "bernoulli": "beta",
    "binomial": "beta",
    "categorical": "dirichlet",
    "multinomial": "dirichlet",
    "poisson": "gamma",
    "normal": "normal",
}
"""The prior kind each supported likelihood needs for its block."""

_BASE_PRIORS = {"beta": pm.Beta, "gamma": pm.Gamma, "normal": pm.Normal}
_UNTRUNCATED = {"beta": pm.Beta, "gamma": pm.Gamma, "normal": pm.Normal, "dirichlet": pm.Dirichlet}
_HOW_TO_TRUNCATE = {
    "beta": "pymc_dp.distributions.TruncatedBeta(name, alpha, beta, a0)",
    "gamma": "pm.Truncated(name, pm.Gamma.dist(alpha, beta), lower=λ_lo, upper=λ_hi)",
    "normal": "pm.TruncatedNormal(name, mu, sigma, lower=m_lo, upper=m_hi)",
    "dirichlet": "pymc_dp.distributions.TruncatedDirichlet(name, alpha, a0)",
}
_RECORD_BOUNDS = {
    "poisson": "data_bounds on the counts",
    "normal": "sigma constant, data_bounds on the values",
}
_ROUTE = "The posterior-sampling mechanisms (mechanism='ops', 'gibbs-exponential', 'metropolis')"

TEMPERED_PATTERNS: tuple[str, ...] = tuple(
    f"{LIKELIHOODS[likelihood].__name__}(θ or θ[group]) with θ ~ {_HOW_TO_TRUNCATE[prior]}"
    + (f", {_RECORD_BOUNDS[likelihood]}" if likelihood in _RECORD_BOUNDS else "")
    for likelihood, prior in LIKELIHOOD_PRIORS.items()
)
"""Every likelihood the posterior-sampling mechanisms take, generated from
:data:`LIKELIHOOD_PRIORS`: the list a refusal of an unsupported likelihood gives."""


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedLikelihood:
    """One observed variable, its block and its log-likelihood bound.

    Attributes
    ----------
    observed, prior : str
        The observed variable and the truncated prior it reads.
    likelihood : str
        ``"bernoulli"``, ``"binomial"``, ``"categorical"``, ``"multinomial"``, ``"poisson"`` or
        ``"normal"``.
    statistics : ndarray, shape (G, d)
        Exact per-group sufficient statistics. **Private**: (successes, failures) for Beta
        blocks, counts (G, K) for Dirichlet blocks, (Σy, n) for Poisson, (Σx/σ², n/σ²) for
        Normal.
    log_likelihood_bound : float
        Δ_v: the largest change of the log-likelihood when one record is replaced, nats.
    grouped : bool
        Whether records choose their parameter by a (private) group label.
    """

    observed: str
    prior: str
    likelihood: str
    statistics: np.ndarray
    log_likelihood_bound: float
    grouped: bool


@value_free_repr
@dataclass(frozen=True, eq=False)
class TemperedBlock:
    """A truncated prior with the observed likelihoods that read it.

    Attributes
    ----------
    prior : str
        Name of the free variable.
    kind : {"beta", "gamma", "normal", "dirichlet"}
    lower, upper : float
        Truncation of every component (Dirichlet: ``lower`` = a0, ``upper`` = 1 − (K − 1)a0).
    shape : tuple of int
        Shape of the variable: () or (G,) for scalar kinds, (K,) or (G, K) for Dirichlet.
    likelihoods : tuple of BoundedLikelihood
    prior_parameters : tuple of Variable
        The prior's parameter graphs (Beta: α, β; Gamma: α, scale; Normal: μ, σ;
        Dirichlet: α), in the source model.
    constant_prior : bool
        Whether the prior parameters depend on no random variable.
    """

    prior: str
    kind: str
    lower: float
    upper: float
    shape: tuple[int, ...]
    likelihoods: tuple[BoundedLikelihood, ...]
    prior_parameters: tuple[Variable, ...]
    constant_prior: bool

    @property
    def statistics(self) -> np.ndarray:
        """Sum of the likelihoods' exact statistics, shape (G, d). Private."""
        return np.sum([lik.statistics for lik in self.likelihoods], axis=0)

    @property
    def n_groups(self) -> int:
        return int(self.statistics.shape[0])

    @property
    def mechanisms_per_update(self) -> int:
        """Exponential mechanisms in one update: 1, or K − 1 pair updates for a Dirichlet."""
        return self.shape[-1] - 1 if self.kind == "dirichlet" else 1


@value_free_repr
@dataclass(frozen=True, eq=False)
class TemperedModel:
    """The blocks of a model, its other free variables and the disjointness declaration.

    Attributes
    ----------
    blocks : tuple of TemperedBlock
    others : tuple of str
        Free variables that read no data (sampled by PyMC on the data-free model).
    disjoint : tuple of tuple of str
        Groups of observed variables declared to hold different people.
    """

    blocks: tuple[TemperedBlock, ...]
    others: tuple[str, ...]
    disjoint: tuple[tuple[str, ...], ...] = ()

    @property
    def likelihoods(self) -> tuple[BoundedLikelihood, ...]:
        return tuple(lik for block in self.blocks for lik in block.likelihoods)

    @property
    def priors(self) -> tuple[str, ...]:
        return tuple(block.prior for block in self.blocks)

    @property
    def exact(self) -> bool:
        """True when the tempered joint factorises into exactly samplable blocks.

        That is: no other free variable, constant prior parameters and no Dirichlet block
        with K > 2 (its truncated conditional is updated by an MCMC kernel; with K = 2 the
        single pair update is an exact truncated-Beta draw).
        """
        return not self.others and all(
            block.constant_prior and (block.kind != "dirichlet" or block.shape[-1] == 2)
            for block in self.blocks
        )

    def compose(self, per_likelihood: Mapping[str, float]) -> float:
        """Worst case over one record of a per-observed-variable quantity.

        Observed variables add (a record may appear in each), except within a declared
        ``disjoint`` group, which contributes its largest value (parallel composition).
        """
        partition = {name: f"disjoint:{i}" for i, g in enumerate(self.disjoint) for name in g}
        costs = [(value, 0.0, partition.get(name, "")) for name, value in per_likelihood.items()]
        return compose(costs)[0]

    def record_log_likelihood_bound(self) -> float:
        """Δ of one record over the whole joint, nats: :meth:`compose` of the Δ_v."""
        return self.compose({lik.observed: lik.log_likelihood_bound for lik in self.likelihoods})

    def sweep_weight(self) -> float:
        """One record's cost of a Gibbs sweep at T = 1, nats: compose of m_v·2Δ_v.

        m_v is the number of exponential mechanisms in the update of v's block (Foulds eq.
        19–20: an update at temperature T costs 2Δ_v/T for each likelihood it reads).
        """
        return self.compose(
            {
                lik.observed: block.mechanisms_per_update * 2.0 * lik.log_likelihood_bound
                for block in self.blocks
                for lik in block.likelihoods
            }
        )


def analyse_tempered_model(
    model: pm.Model,
    *,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    max_trials: Mapping[str, int] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    inputs: ModelInputs | None = None,
) -> TemperedModel:
    """Blocks and bounds of ``model`` for posterior sampling at temperature T, or a refusal.

    Parameters
    ----------
    model : pm.Model
    data_bounds : dict, optional
        ``{observed name: (low, high)}``: the declared range of every record of a Poisson
        (counts m..M) or Normal (values a..b) likelihood. Required for those likelihoods.
    max_trials : dict, optional
        ``{observed name: M}`` for Binomial/Multinomial likelihoods with per-record trials.
    disjoint : sequence of sequences of str
        Groups of observed variables whose records are different people (a public split that
        a replaced record cannot cross). Each group composes in parallel. Refused when two
        of a group's likelihoods read the same records.
    inputs : ModelInputs, optional
        The model's classified inputs (:func:`pymc_dp.analysis.inputs.classify_inputs`);
        classified here, with nothing declared public, when not given.

    Raises
    ------
    NonPrivateModelError
        For an observed variable that is not a supported likelihood of a truncated prior
        (the message names the missing truncation or bound), a prior that feeds anything
        else, a non-block free variable read by a likelihood, or non-constant truncation
        bounds, Normal σ or Dirichlet α; or for a ``disjoint`` group two of whose
        likelihoods read the same observed or group-label array (one array or equal copies).
    InvalidPrivateDataError
        If a record lies outside its declared domain (NaN, out of bounds, unknown category).
    ValueError
        For bounds or ``disjoint`` groups that name unknown variables, or bad bounds.
    """
    data_bounds, max_trials = dict(data_bounds or {}), dict(max_trials or {})
    reject_imputation(model)
    if not model.observed_RVs:
        raise NonPrivateModelError("the model has no observed variables: nothing is private")
    observed_names = {rv.name for rv in model.observed_RVs}
    for option, names in (("data_bounds", data_bounds), ("max_trials", max_trials)):
        unknown = sorted(set(names) - observed_names)
        if unknown:
            raise ValueError(f"{option} names unknown observed variables: {unknown}")
    groups = tuple(tuple(group) for group in disjoint)
    _check_disjoint(groups, observed_names)
    by_prior: dict[str, list[BoundedLikelihood]] = {}
    priors: dict[str, Variable] = {}
    records: dict[str, _RecordArrays] = {}
    for rv in model.observed_RVs:
        likelihood, prior_rv, records[rv.name] = _bounded_likelihood(
            model, rv, data_bounds.get(rv.name), max_trials.get(rv.name)
        )
        by_prior.setdefault(prior_rv.name, []).append(likelihood)
        priors[prior_rv.name] = prior_rv
    _refuse_shared_records(groups, records)
    refuse_private_reads(
        model, inputs if inputs is not None else classify_inputs(model), observed_names
    )
    blocks = []
    for name, likelihoods in by_prior.items():
        prior_rv = priors[name]
        check_conjugate_dependents(model, prior_rv, {lik.observed for lik in likelihoods})
        blocks.append(_block(model, prior_rv, likelihoods))
    others = tuple(rv.name for rv in model.free_RVs if rv.name not in by_prior)
    return TemperedModel(tuple(blocks), others, groups)


def _check_disjoint(groups, observed_names) -> None:
    seen: set[str] = set()
    for group in groups:
        unknown = sorted(set(group) - observed_names)
        if unknown:
            raise ValueError(f"disjoint names unknown observed variables: {unknown}")
        if len(group) < 2 or seen & set(group) or len(set(group)) != len(group):
            raise ValueError(
                "each disjoint group needs two or more observed variables, each named once "
                f"across all groups; got {list(groups)}"
            )
        seen |= set(group)


@value_free_repr
@dataclass(frozen=True, eq=False)
class _RecordArrays:
    """The arrays one likelihood reads its records from (private: kept only while the model
    is analysed, to check a ``disjoint`` declaration; never in a block)."""

    observed: Variable
    observed_values: np.ndarray = field(repr=False)
    labels: Variable | None = None
    label_values: np.ndarray | None = field(default=None, repr=False)


def _same_array(a: Variable, a_values, b: Variable, b_values) -> bool:
    """Whether two record arrays are one array: the same graph variable or container, or
    equal values (a copy of the same records)."""
    return a is b or same_values(a_values, b_values)


def _refuse_shared_records(groups, records: Mapping[str, _RecordArrays]) -> None:
    """Refuse a ``disjoint`` group two of whose likelihoods read the same records.

    A disjoint declaration says that one person's record is in at most one of the group's
    observed variables, so a replaced record changes one likelihood and the group costs its
    largest Δ_v. Two likelihoods that read the same observed array, or the same group labels
    (a record's label is part of the record), see one replaced record in both: the group then
    costs the sum, and declaring it disjoint would charge less than the release spends. Equal
    values count as the same array (a copy of the records). The message names the variables,
    never a value.
    """
    for group in groups:
        for i, first in enumerate(group):
            for second in group[i + 1 :]:
                a, b = records[first], records[second]
                shared = []
                if _same_array(a.observed, a.observed_values, b.observed, b.observed_values):
                    shared.append("observed values")
                if (
                    a.labels is not None
                    and b.labels is not None
                    and _same_array(a.labels, a.label_values, b.labels, b.label_values)
                ):
                    shared.append("group labels")
                if shared:
                    raise NonPrivateModelError(
                        f"disjoint group {list(group)}: {first} and {second} read the same "
                        f"{' and '.join(shared)} (one array, or equal copies), so one record "
                        "is in both likelihoods and they cannot compose in parallel. Declare "
                        "disjoint only observed variables whose records are different people "
                        "by a public split. Nothing was released."
                    )


def _likelihood_kind(rv: Variable) -> str | None:
    return distribution_name(rv, LIKELIHOODS)


def _prior_kind(prior_rv: Variable) -> str | None:
    """The truncated prior's kind, or None if it is not a supported truncated prior."""
    op = prior_rv.owner.op if prior_rv.owner is not None else None
    if isinstance(op, TruncatedDirichletRV):
        return "dirichlet"
    if isinstance(op, TruncatedNormalRV):
        return "normal"
    if isinstance(op, TruncatedRV):
        for name, dist in _BASE_PRIORS.items():
            if isinstance(op.base_rv_op, type(dist.rv_op)):
                return name
    return None


def _untruncated_kind(prior_rv: Variable) -> str | None:
    op = prior_rv.owner.op if prior_rv.owner is not None else None
    for name, dist in _UNTRUNCATED.items():
        if isinstance(op, type(dist.rv_op)):
            return name
    return None


def _bounded_likelihood(
    model: pm.Model, observed_rv: Variable, bounds, trials_bound
) -> tuple[BoundedLikelihood, Variable, _RecordArrays]:
    name = observed_rv.name
    likelihood = _likelihood_kind(observed_rv)
    if likelihood is None:
        found = f"a {type(observed_rv.owner.op).__name__} likelihood"
        raise unsupported_likelihood(name, found, _ROUTE, TEMPERED_PATTERNS)
    params = observed_rv.owner.op.dist_params(observed_rv.owner)
    parameter = params[0] if likelihood == "normal" else params[-1]
    prior_rv, index = split_parameter(parameter, model, name)
    needed = LIKELIHOOD_PRIORS[likelihood]
    kind = _prior_kind(prior_rv)
    deterministic = deterministic_of(prior_rv, model)
    if deterministic is not None:
        raise wrapped_parameter(name, "parameter", deterministic)
    if prior_rv not in model.basic_RVs:  # a computed parameter: a link function, X @ beta
        found = (
            f"a {LIKELIHOODS[likelihood].__name__} whose parameter is computed: "
            f"{describe_graph(prior_rv)}"
        )
        raise unsupported_likelihood(name, found, _ROUTE, TEMPERED_PATTERNS)
    if prior_rv not in model.free_RVs or kind is None:
        plain = _untruncated_kind(prior_rv) if prior_rv.owner is not None else None
        missing = (
            f"its prior {prior_rv.name} is an untruncated {plain}, so Δ = ∞"
            if plain == needed
            else f"its parameter must be a truncated {needed} free variable (p or p[group])"
        )
        raise NonPrivateModelError(
            f"{name}: {missing}; use {_HOW_TO_TRUNCATE[needed]} to bound the parameter"
        )
    if kind != needed:
        raise NonPrivateModelError(
            f"{name}: a {likelihood} likelihood needs a truncated {needed} prior, got {kind}"
        )
    for parent in params:
        others = [
            a.name
            for a in ancestors([parent], blockers=[prior_rv])
            if a in model.free_RVs and a is not prior_rv
        ]
        if others:
            raise NonPrivateModelError(
                f"{name}: its likelihood reads {others} besides {prior_rv.name}; only the "
                "block's own parameter may depend on free variables"
            )
    shape = tuple(int(s) for s in model.eval_rv_shapes()[prior_rv.name])
    event_ndim = 1 if kind == "dirichlet" else 0
    if len(shape) != (1 if index is not None else 0) + event_ndim:
        expected = ("groups",) * (index is not None) + ("categories",) * event_ndim
        use = "indexed" if index is not None else "direct"
        raise NonPrivateModelError(
            f"{name}: prior {prior_rv.name} has shape {shape}; expected ({', '.join(expected)}) "
            f"for {use} use"
        )
    n_groups = shape[0] if index is not None else 1
    groups = None
    if index is not None:
        groups = require_integers(
            record_values(index, name, "group labels").reshape(-1), name, "group labels"
        )
        reject_out_of_range(groups, 0, n_groups - 1, name, "group labels")
    observed_var = model.rvs_to_values[observed_rv]
    data = record_values(observed_var, name, "observed values")
    lower, upper = _truncation(prior_rv, kind, shape, name)
    grouped = groups is not None and n_groups > 1
    statistics, bound = _STATISTICS[likelihood](
        name, data, params, model, (lower, upper), grouped, bounds, trials_bound, shape
    )
    n_records = _n_records(data, likelihood)
    if groups is not None and groups.shape != (n_records,):
        raise InvalidPrivateDataError(f"{name}: {groups.size} group labels for {n_records} records")
    table = group_sums(statistics, groups, n_groups)
    arrays = _RecordArrays(
        require_as_is(observed_var, name, "observed values"),
        data,
        None if index is None else require_as_is(index, name, "group labels"),
        groups,
    )
    bounded = BoundedLikelihood(name, prior_rv.name, likelihood, table, bound, grouped)
    return bounded, prior_rv, arrays


def _n_records(data: np.ndarray, likelihood: str) -> int:
    """Number of records of an observed array (rows for a Multinomial)."""
    return int(data.shape[0]) if likelihood == "multinomial" else int(np.asarray(data).size)


def _truncation(prior_rv, kind: str, shape, name: str) -> tuple[float, float]:
    bounds = prior_rv.owner.inputs[-1:] if kind == "dirichlet" else prior_rv.owner.inputs[-2:]
    try:
        values = [np.unique(variable_value(b)) for b in bounds]
    except Exception as error:
        raise NonPrivateModelError(
            f"{name}: the truncation of {prior_rv.name} must be a constant (it sets Δ)"
        ) from error
    if any(v.size != 1 for v in values):
        raise NonPrivateModelError(
            f"{name}: {prior_rv.name} needs one truncation for every group and component"
        )
    values = [float(v[0]) for v in values]
    if kind == "dirichlet":
        a0 = values[0]
        return a0, 1.0 - (shape[-1] - 1) * a0
    lower, upper = values
    if not (math.isfinite(lower) and math.isfinite(upper)):
        raise NonPrivateModelError(
            f"{name}: {prior_rv.name} is truncated to [{lower}, {upper}]; both ends must be "
            f"finite for Δ to be finite ({_HOW_TO_TRUNCATE[kind]})"
        )
    if kind == "beta" and not 0 < lower < upper < 1:
        raise NonPrivateModelError(
            f"{name}: {prior_rv.name} must be truncated inside (0, 1), got [{lower}, {upper}]"
        )
    if kind == "gamma" and not 0 < lower < upper:
        raise NonPrivateModelError(
            f"{name}: {prior_rv.name} must be truncated to 0 < λ_lo < λ_hi, got [{lower}, {upper}]"
        )
    return lower, upper


def prior_parameter_variables(rv: Variable, kind: str) -> tuple[Variable, ...]:
    """A truncated prior's parameter graphs: Beta (α, β), Gamma (α, scale), Normal (μ, σ),
    Dirichlet (α,). Truncation bounds are not included."""
    inputs = rv.owner.inputs  # rng, size, *parameters, bound(s)
    return tuple(inputs[2:3] if kind == "dirichlet" else inputs[2:-2])


def _block(model: pm.Model, prior_rv, likelihoods: list[BoundedLikelihood]) -> TemperedBlock:
    kind = _prior_kind(prior_rv)
    shape = tuple(int(s) for s in model.eval_rv_shapes()[prior_rv.name])
    parameters = prior_parameter_variables(prior_rv, kind)
    constant = all(is_data(p, model) for p in parameters)
    if kind == "dirichlet" and not constant:
        raise NonPrivateModelError(
            f"{prior_rv.name}: a TruncatedDirichlet needs a constant alpha (its truncation "
            "constant is not computed, so a hyperprior on alpha would be sampled wrongly)"
        )
    lower, upper = _truncation(prior_rv, kind, shape, likelihoods[0].observed)
    return TemperedBlock(
        prior_rv.name, kind, lower, upper, shape, tuple(likelihoods), parameters, constant
    )


# --- per-likelihood statistics and bounds ---------------------------------------------------


def _probability_statistics(
    likelihood, name, data, params, model, truncation, grouped, bounds, trials_bound, shape
):
    """Counts and Δ (the log-likelihood bound) of a Bernoulli, Binomial, Categorical or
    Multinomial likelihood (the family's own
    :meth:`~pymc_dp.families.base.ConjugateFamily.log_likelihood_bound`)."""
    if bounds is not None:
        raise ValueError(f"{name}: data_bounds is for Poisson and Normal likelihoods")
    if trials_bound is not None and likelihood in ("bernoulli", "categorical"):
        raise ValueError(f"{name}: max_trials is for Binomial and Multinomial likelihoods")
    prior = LIKELIHOOD_PRIORS[likelihood]
    family = FAMILIES[(prior, likelihood)]
    n_categories = shape[-1] if prior == "dirichlet" else 2
    domain = record_domain(likelihood, params, n_categories, trials_bound, model, name)
    records = data if likelihood == "multinomial" else data.reshape(-1)
    family.validate(records, domain, name)
    bound = family.log_likelihood_bound(domain, *truncation)
    return family.record_statistics(records, domain), bound


def _poisson_statistics(name, data, params, model, truncation, grouped, bounds, trials, shape):
    if trials is not None:
        raise ValueError(f"{name}: max_trials is for Binomial and Multinomial likelihoods")
    return poisson_tempered_statistics(name, data, truncation, grouped, bounds)


def _normal_statistics(name, data, params, model, truncation, grouped, bounds, trials, shape):
    if trials is not None:
        raise ValueError(f"{name}: max_trials is for Binomial and Multinomial likelihoods")
    return normal_tempered_statistics(name, data, params[1], model, truncation, grouped, bounds)


_STATISTICS = {
    **{
        likelihood: partial(_probability_statistics, likelihood)
        for likelihood in ("bernoulli", "binomial", "categorical", "multinomial")
    },
    "poisson": _poisson_statistics,
    "normal": _normal_statistics,
}
