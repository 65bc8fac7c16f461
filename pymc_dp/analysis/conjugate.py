"""Find the links the Laplace statistics release — conjugate pairs and bounded likelihoods.

A link is an observed variable whose likelihood is one of the supported families
(:data:`pymc_dp.families.FAMILIES`) and whose probability parameter is a Beta or Dirichlet
free variable, used directly (one group) or indexed by a constant integer vector of group
labels (``p[group]``, one row of statistics per group). Anything else that reads observed data
makes :func:`analyse_model` raise :class:`~pymc_dp.NonPrivateModelError`: pymc_dp never falls
back to a non-private sampler.

Poisson, Normal (unknown mean and sd) and linear-regression likelihoods with declared
``data_bounds`` are found by :mod:`pymc_dp.analysis.bounded`; :func:`analyse_model` returns
both kinds of link.

The records, the group labels and per-record trials must be the arrays or ``pm.Data``
containers themselves, used as is (:func:`pymc_dp.graph.reading.require_as_is`, the rule the
bounded recogniser applies too): the statistics are computed from the containers' values, so
a cast (``p[pt.cast(g, "int8")]`` wraps label 200 to -56, which indexes from the end), a
scaling or any other transformation would release the statistics of another model than the
one written. The one wrapper let through is PyMC's own cast of the observed values to the
likelihood's integer dtype (a widening cast, or float records, which validation refuses
unless whole numbers in the domain).

The privacy unit is one element of the observed vector (one row for a Multinomial), together
with its group label and, for Binomial/Multinomial likelihoods with per-record trials, its
number of trials.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pymc.distributions.truncated import TruncatedRV
from pytensor.graph.basic import Variable

from pymc_dp.analysis.bounded import (
    bounded_data_bounds_keys,
    bounded_family_of,
    find_bounded_link,
)
from pymc_dp.analysis.inputs import ModelInputs, classify_inputs, refuse_private_reads
from pymc_dp.distributions import TruncatedDirichletRV
from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError, value_free_repr
from pymc_dp.families import FAMILIES, LAPLACE_PATTERNS
from pymc_dp.families.base import ConjugateLink, RecordDomain, require_integers
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.graph.reading import (
    CONJUGATE_LIKELIHOODS,
    LIKELIHOODS,
    OBSERVED,
    TRIALS_LIKELIHOODS,
    check_conjugate_dependents,
    dask_records,
    describe_graph,
    deterministic_of,
    distribution_name,
    is_data,
    likelihoods,
    record_values,
    reject_imputation,
    require_as_is,
    rv_shape,
    split_parameter,
    strip_expand_dims,
    unsupported_likelihood,
    variable_value,
    wrapped_parameter,
)
from pymc_dp.records import summarise

__all__ = [
    "ConjugateLink",
    "DirichletPosteriorBlock",
    "analyse_model",
    "conjugate_structure",
    "find_conjugate_link",
    "find_dirichlet_posterior",
    "record_domain",
]

_PRIORS = {"beta": pm.Beta, "dirichlet": pm.Dirichlet}
_LIKELIHOODS = likelihoods(CONJUGATE_LIKELIHOODS)
_ROUTE = "The Laplace statistics (mechanism='laplace')"


def record_domain(likelihood, params, n_categories, max_trials, model, name) -> RecordDomain:
    """Declared domain of one record: categories and, for Binomial/Multinomial, trials.

    One number of trials (public, a design constant or a declared ``pm.Data``) is read as the
    likelihood computes it. Per-record trials are records: they are read from their container,
    used as is (:func:`~pymc_dp.graph.reading.require_as_is`; PyMC only inserts broadcast
    dimensions in front of it).

    Raises
    ------
    NonPrivateModelError
        If the trials are random, per-record (private) without a declared ``max_trials``, or
        per-record and computed in the graph (a cast, a scaling, ...).
    InvalidPrivateDataError
        If public scalar trials exceed the declared ``max_trials``.
    """
    if likelihood not in TRIALS_LIKELIHOODS:
        return RecordDomain(n_categories=n_categories)
    trials_var = params[0]
    if not is_data(trials_var, model):
        raise NonPrivateModelError(f"{name}: the number of trials must be data, not random")
    if dask_records(strip_expand_dims(trials_var)) is not None:
        raise NonPrivateModelError(
            f"{name}: per-record trials in a Dask collection are not supported; give the "
            "trials as one public number, or the records in memory. Nothing was released."
        )
    trials = variable_value(trials_var)
    if trials.size > 1:  # per-record trials are records
        trials = record_values(strip_expand_dims(trials_var), name, "per-record trials")
    if trials.ndim == 0 or trials.size == 1:
        trials = int(require_integers(trials.reshape(()), name, "trials"))
        declared = trials if max_trials is None else int(max_trials)
        if trials > declared:
            raise InvalidPrivateDataError(
                f"{name}: its number of trials exceeds the declared max_trials={declared}"
            )
        return RecordDomain(n_categories, max_trials=declared, trials=trials)
    if max_trials is None:
        raise NonPrivateModelError(
            f"{name}: per-record trials are private data; declare their bound with "
            f"max_trials={{'{name}': M}} (a bound read off the data would leak it)"
        )
    trials = require_integers(trials.reshape(-1), name, "per-record trials")
    return RecordDomain(n_categories, max_trials=int(max_trials), trials=trials)


def _truncation(prior_rv: Variable) -> tuple[float, float] | None:
    """(lower, upper) of a ``pm.Truncated`` prior with constant bounds, else None."""
    if not isinstance(prior_rv.owner.op, TruncatedRV):
        return None
    lower, upper = (float(variable_value(v)) for v in prior_rv.owner.inputs[-2:])
    return lower, upper


def conjugate_structure(model: pm.Model, observed_rv: Variable):
    """(likelihood, params, prior_rv, index, prior) of a conjugate likelihood, read from the
    graph alone (no record is read), or a refusal.

    Raises
    ------
    NonPrivateModelError
        If the likelihood is unsupported (another distribution, or a probability that is not
        a Beta or Dirichlet free variable: a logistic link, a computed graph), naming what was
        found and listing :data:`~pymc_dp.families.LAPLACE_PATTERNS`; if the probability is a
        ``pm.Deterministic`` (remove it); if it is a TruncatedDirichlet.
    """
    name = observed_rv.name
    likelihood = distribution_name(observed_rv, _LIKELIHOODS)
    if likelihood is None:
        found = f"a {type(observed_rv.owner.op).__name__} likelihood"
        raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS)
    params = observed_rv.owner.op.dist_params(observed_rv.owner)
    prob = params[-1]
    prior_rv, index = split_parameter(prob, model, name)
    deterministic = deterministic_of(prior_rv, model)
    if deterministic is not None:
        raise wrapped_parameter(name, "probability", deterministic)
    if prior_rv.owner is not None and isinstance(prior_rv.owner.op, TruncatedDirichletRV):
        raise NonPrivateModelError(
            f"{name}: its probability {prior_rv.name} is a TruncatedDirichlet, which only the "
            "posterior-sampling mechanisms take (mechanism='ops', 'gibbs-exponential'); the "
            "released statistics and the Dirichlet posterior releases need an untruncated "
            "pm.Dirichlet. Nothing was released."
        )
    prior = distribution_name(prior_rv, _PRIORS)
    if prior is None or prior_rv not in model.free_RVs:
        what = (
            f"the free variable {prior_rv.name!r} ({type(prior_rv.owner.op).__name__})"
            if prior_rv in model.free_RVs
            else describe_graph(prior_rv)
        )
        found = f"a {LIKELIHOODS[likelihood].__name__} whose probability is {what}"
        raise unsupported_likelihood(name, found, _ROUTE, LAPLACE_PATTERNS)
    return likelihood, params, prior_rv, index, prior


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
        If the variable is not a supported likelihood with a Beta/Dirichlet parameter, or its
        records, group labels or per-record trials are computed in the graph rather than read
        as is (:func:`~pymc_dp.graph.reading.require_as_is`).
    """
    name = observed_rv.name
    likelihood, params, prior_rv, index, prior = conjugate_structure(model, observed_rv)
    values = model.rvs_to_values[observed_rv]
    require_as_is(values, name, OBSERVED)
    if index is not None:
        require_as_is(index, name, "group labels")
    family = FAMILIES.get((prior, likelihood))
    if family is None:
        raise NonPrivateModelError(f"{name}: a {prior} prior is not conjugate to a {likelihood}")
    shape = rv_shape(model, prior_rv)
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
    data = record_values(values, name, OBSERVED)
    if likelihood != "multinomial":
        data = data.reshape(-1)
    groups = None if index is None else record_values(index, name, "group labels").reshape(-1)
    truncation = _truncation(prior_rv)
    return ConjugateLink(name, prior_rv.name, family, data, groups, n_groups, domain, truncation)


def analyse_model(
    model: pm.Model,
    max_trials: Mapping[str, int] | None = None,
    inputs: ModelInputs | None = None,
    *,
    data_bounds: Mapping[str, object] | None = None,
    clamp_to_bounds: bool | Collection[str] = False,
    covariate_bins: Mapping[str, object] | None = None,
    progressbar: bool = False,
) -> dict[str, ConjugateLink | BoundedLink]:
    """Links for every observed variable of ``model``, validated; or a refusal.

    Checks, in order: no imputed (NaN) observations; the structure of every bounded
    likelihood (Poisson, Normal, linear regression: :mod:`pymc_dp.analysis.bounded`, with
    its ``data_bounds``); the structure of every other likelihood, a Beta or Dirichlet
    conjugate pair (:func:`~pymc_dp.analysis.conjugate.conjugate_structure`: anything else
    is refused as unsupported,
    before the declarations and the private reads are checked); nothing but the observed
    likelihoods reads a private array, and a regression's covariates are read by its
    likelihood only (:func:`pymc_dp.analysis.inputs.refuse_private_reads`; ``inputs`` is
    classified here, nothing declared public, when not given); every Beta/Dirichlet prior
    that feeds a likelihood feeds nothing else (no other random variable or potential
    depends on it), so that its conditional is exactly the conjugate posterior; every record
    lies in its declared domain (or is clamped into its bounds, on opt-in). Records in a Dask
    collection (:func:`pymc_dp.Data`) are validated, and their statistics computed, in one
    pass (:func:`pymc_dp.records.summarise`).

    Parameters
    ----------
    model : pm.Model
    max_trials : dict, optional
        ``{observed name: M}`` for Binomial/Multinomial likelihoods with per-record trials.
    inputs : ModelInputs, optional
    data_bounds : dict, optional
        ``{key: (low, high)}`` for the bounded likelihoods: the observed name for its values,
        the covariates' ``pm.Data`` name (or ``"<observed>_covariates"`` for a constant
        matrix) for a regression's covariates (one pair, or one per column).
    clamp_to_bounds : bool or collection of str
        Clamp records outside their declared bounds into them instead of refusing them: True
        for every ``data_bounds`` key, or the keys to clamp.
    covariate_bins : dict, optional
        ``{covariates key: bins}`` for per-record covariates read per cell (logistic and
        Poisson regression: :func:`pymc_dp.families.recognition.covariate_bins_of`).
    progressbar : bool
        Show the progress of the pass over Dask-backed records.

    Returns
    -------
    dict
        Observed variable name → :class:`~pymc_dp.ConjugateLink` or
        :class:`~pymc_dp.families.bounded.BoundedLink`, in model order.

    Raises
    ------
    NonPrivateModelError, InvalidPrivateDataError
    ValueError
        For ``max_trials``, ``data_bounds`` or ``clamp_to_bounds`` naming unknown variables
        or variables they do not apply to.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> link.observed, link.prior, link.n_groups
    ('y', 'p', 1)
    """
    max_trials = dict(max_trials or {})
    data_bounds = dict(data_bounds or {})
    reject_imputation(model)
    if not model.observed_RVs:
        raise NonPrivateModelError("the model has no observed variables: nothing is private")
    clamp = _clamp_keys(clamp_to_bounds, data_bounds)
    bins = _covariate_bins_declaration(covariate_bins)
    bounded = {
        rv.name: find_bounded_link(model, rv, data_bounds, clamp, bins)
        for rv in model.observed_RVs
        if bounded_family_of(model, rv) is not None
    }
    for rv in model.observed_RVs:
        if rv.name not in bounded:  # unsupported likelihoods are refused as such, first
            conjugate_structure(model, rv)
    unused = sorted(set(data_bounds) - bounded_data_bounds_keys(bounded))
    if unused:
        raise ValueError(
            f"data_bounds names {unused}, which no Poisson, Normal or regression likelihood "
            "reads (keys: the observed name, and the covariates container a regression or a "
            "likelihood read per cell reads)"
        )
    binned = {b.key for link in bounded.values() for b in link.link.structure.covariate_bins}
    unused = sorted(set(bins) - binned)
    if unused:
        raise ValueError(
            f"covariate_bins names {unused}, which no likelihood reads as per-record "
            f"covariates through bins (binned here: {sorted(binned)})"
        )
    misplaced = sorted(set(max_trials) & set(bounded))
    if misplaced:
        raise ValueError(f"max_trials is for Binomial and Multinomial likelihoods: {misplaced}")
    refuse_private_reads(
        model,
        inputs if inputs is not None else classify_inputs(model),
        {rv.name for rv in model.observed_RVs},
        claims={name: found.claims for name, found in bounded.items()},
    )
    links = {
        rv.name: bounded[rv.name].link
        if rv.name in bounded
        else find_conjugate_link(model, rv, max_trials.pop(rv.name, None))
        for rv in model.observed_RVs
    }
    if max_trials:
        raise ValueError(f"max_trials names unknown observed variables: {sorted(max_trials)}")
    conjugate = {name: link for name, link in links.items() if isinstance(link, ConjugateLink)}
    for prior_name in {link.prior for link in conjugate.values()}:
        handled = {name for name, link in conjugate.items() if link.prior == prior_name}
        check_conjugate_dependents(model, model[prior_name], handled)
    return summarise(links, progressbar=progressbar)


def _covariate_bins_declaration(covariate_bins) -> dict[str, object]:
    """``covariate_bins`` as a dict (keys checked against the model by the caller)."""
    if covariate_bins is None:
        return {}
    if not isinstance(covariate_bins, Mapping) or not all(
        isinstance(k, str) for k in covariate_bins
    ):
        kinds = (
            sorted({type(k).__name__ for k in covariate_bins})
            if isinstance(covariate_bins, Mapping)
            else []
        )
        raise ValueError(
            "covariate_bins must be a dict {covariates name (str): bins}, got a "
            f"{type(covariate_bins).__name__} (key types {kinds})"
        )
    return dict(covariate_bins)


def _clamp_keys(clamp_to_bounds, data_bounds: Mapping) -> frozenset[str]:
    """The ``data_bounds`` keys to clamp (True: all of them).

    Raises
    ------
    ValueError
        If ``clamp_to_bounds`` is neither a bool nor a collection of ``data_bounds`` keys.
    """
    if isinstance(clamp_to_bounds, bool | np.bool_):
        return frozenset(data_bounds) if clamp_to_bounds else frozenset()
    if isinstance(clamp_to_bounds, str) or not isinstance(clamp_to_bounds, Collection):
        raise ValueError(
            "clamp_to_bounds must be True, False or a list of data_bounds keys, got "
            f"{clamp_to_bounds!r}"
        )
    unknown = sorted(set(clamp_to_bounds) - set(data_bounds))
    if unknown:
        raise ValueError(
            f"clamp_to_bounds names {unknown}, which have no declared data_bounds (clamping "
            "needs a declared range)"
        )
    return frozenset(clamp_to_bounds)


@value_free_repr
@dataclass(frozen=True, eq=False)
class DirichletPosteriorBlock:
    """The one Dirichlet–Categorical pair whose posterior the Dirichlet mechanisms release
    (:mod:`pymc_dp.mechanisms.dirichlet`).

    Attributes
    ----------
    link : ConjugateLink
        The Categorical likelihood and its Dirichlet prior (one group, untruncated).
    alpha : ndarray of float64, shape (k,)
        The prior's concentrations: a constant of the model (public), which the mechanisms'
        candidate set R_α and sensitivities depend on.
    """

    link: ConjugateLink
    alpha: np.ndarray

    @property
    def priors(self) -> tuple[str, ...]:
        """The variable the private step samples (as the ``priors`` of a
        :class:`~pymc_dp.analysis.tempered.TemperedModel`)."""
        return (self.link.prior,)


def find_dirichlet_posterior(
    model: pm.Model, links: Mapping[str, ConjugateLink | BoundedLink], mechanism: str
) -> DirichletPosteriorBlock:
    """The block a Dirichlet mechanism releases, from :func:`analyse_model`'s links.

    The model must have exactly one observed variable, a Categorical likelihood whose
    probability is one (ungrouped, untruncated) Dirichlet free variable with constant
    concentrations: the note's setting (records in k categories, prior Dir(α), α public).

    Raises
    ------
    NonPrivateModelError
        For any other model, naming what does not fit.
    """
    what = f"mechanism={mechanism!r} releases the posterior of one Dirichlet-Categorical pair"
    if len(links) != 1:
        raise NonPrivateModelError(
            f"{what}; this model has {len(links)} observed variables ({sorted(links)}). Use "
            "mechanism='laplace' for several likelihoods."
        )
    (link,) = links.values()
    if not isinstance(link, ConjugateLink) or link.family.likelihood != "categorical":
        raise NonPrivateModelError(
            f"{what}; {link.observed} is not a Categorical likelihood with a Dirichlet "
            "probability parameter"
        )
    if link.n_groups != 1 or link.groups is not None:
        raise NonPrivateModelError(
            f"{what}; {link.observed} indexes {link.prior} by group labels. The mechanisms "
            "release one histogram: use mechanism='laplace' for grouped counts."
        )
    if link.truncation is not None:
        raise NonPrivateModelError(f"{what}; {link.prior} must not be truncated")
    prior_rv = model[link.prior]
    (concentration,) = prior_rv.owner.op.dist_params(prior_rv.owner)
    if not is_data(concentration, model):
        raise NonPrivateModelError(
            f"{what}; the concentrations of {link.prior} must be constants (the candidate "
            "posteriors R_alpha and the sensitivity depend on alpha), not random variables"
        )
    k = link.domain.n_categories
    alpha = np.broadcast_to(np.asarray(variable_value(concentration), dtype=np.float64), (k,))
    if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise ValueError(f"the concentrations of {link.prior} must be finite and > 0")
    return DirichletPosteriorBlock(link, alpha.copy())
