"""Private posterior predictive: new records drawn from released parameters only.

``pm.sample_posterior_predictive`` on the user's model is **not** private: it reads the
model's observed values, private group labels and per-record trials, draws one replicate per
private record (so the replicates carry each record's group), and with
``extend_inferencedata=True`` copies the raw records into the trace's ``observed_data``.

:func:`sample_posterior_predictive` instead builds a *predictive model* from the structure of
each observed likelihood — its family, its parameter θ or θ[group], and its public design
constants (a scalar number of trials, a constant σ) — and draws ``records_per_group`` new
records for every group from each posterior draw of θ. It never reads an observed value, a
group label or a per-record trial count, so it is post-processing of what the trace released
and costs nothing (the trace's ledger is unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pymc as pm
import xarray as xr
from pymc.model import modelcontext
from pytensor.graph.traversal import ancestors
from pytensor.tensor.sharedvar import TensorSharedVariable

from pymc_dp.certificate import certify, still_certified
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.graph.reading import (
    LIKELIHOODS,
    distribution_name,
    split_parameter,
    variable_value,
)
from pymc_dp.ledger import LEDGER_ATTR, LEDGER_GROUP
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of

__all__ = ["PREDICTIVE_GROUP", "sample_posterior_predictive"]

PREDICTIVE_GROUP = "posterior_predictive"


def sample_posterior_predictive(
    idata: xr.DataTree,
    *,
    model: pm.Model | None = None,
    var_names: Sequence[str] | None = None,
    records_per_group: int = 1,
    trials: Mapping[str, int] | None = None,
    random_seed=None,
    extend_inferencedata: bool = True,
    progressbar: bool = False,
) -> xr.DataTree:
    """New records for every group, from the released posterior draws of a private trace.

    Parameters
    ----------
    idata : xarray.DataTree
        A trace returned by :func:`pymc_dp.sample` (it must carry a privacy ledger).
    model : pm.Model, optional
        The model that was sampled (from context by default). Only its structure and public
        design constants are read.
    var_names : sequence of str, optional
        Observed variables to predict (default: all).
    records_per_group : int
        New records drawn per group and posterior draw (dimension ``<name>_record``).
    trials : dict, optional
        ``{observed name: m}``: the number of trials of a new record, for Binomial/Multinomial
        likelihoods whose trials are per-record (private) in the model. A public choice.
    random_seed
        Seed for the predictive draws (post-processing: reproducibility is harmless).
    extend_inferencedata : bool
        Add the group ``posterior_predictive`` to ``idata`` (in place) and return it;
        otherwise return a new DataTree holding only that group.
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        Group ``posterior_predictive``: variable ``<observed name>`` with dims
        ``(chain, draw, <group dims>, <name>_record[, category])``. Never ``observed_data``.
        Added in place to a trace whose ledger covers all of it, the group is covered too
        (:mod:`pymc_dp.certificate`): :func:`pymc_dp.to_netcdf` writes it.

    Raises
    ------
    ValueError
        If ``idata`` carries no privacy ledger or lacks a parameter, or options are invalid.
    NonPrivateModelError
        For a likelihood whose new records would need private inputs (per-record trials
        without ``trials``) or that has no predictive here (the naive-Bayes HMM).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 3, size=1_000)  # private: each record's group ...
    >>> outcome = rng.binomial(1, np.array([0.1, 0.3, 0.6])[group])  # ... and its 0/1 outcome
    >>> with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
    ...     rate = pm.Beta("rate", 1, 1, dims="group")
    ...     y = pm.Bernoulli("outcome", p=rate[group], observed=outcome)
    ...     idata = pymc_dp.sample(200, epsilon=1.0, tune=100, chains=1, random_seed=1,
    ...                            progressbar=False)
    >>> with model:  # new records from the released parameters only: free post-processing
    ...     _ = pymc_dp.sample_posterior_predictive(idata, records_per_group=10, random_seed=2)
    >>> idata["posterior_predictive"]["outcome"].dims
    ('chain', 'draw', 'group', 'outcome_record')
    >>> idata["posterior_predictive"]["outcome"].shape
    (1, 200, 3, 10)
    """
    model = modelcontext(model)
    if LEDGER_ATTR not in idata.attrs and LEDGER_GROUP not in idata.children:
        raise ValueError("idata is not a private trace from pymc_dp.sample (it has no ledger)")
    if hmm_spec_of(model) is not None:
        raise NonPrivateModelError(
            "no private posterior predictive for the naive-Bayes HMM here: new cells need the "
            "private region × time grid of states; use the released emission and transition "
            "draws directly"
        )
    if int(records_per_group) < 1:
        raise ValueError(f"records_per_group must be >= 1, got {records_per_group!r}")
    trials = dict(trials or {})
    observed = {rv.name: rv for rv in model.observed_RVs}
    names = list(var_names) if var_names is not None else list(observed)
    unknown = sorted((set(names) | set(trials)) - set(observed))
    if unknown:
        raise ValueError(f"not observed variables of the model: {unknown}")
    posterior = idata["posterior"].to_dataset()
    per_group = int(records_per_group)
    coords = {f"{name}_record": list(range(per_group)) for name in names}
    for name in names:
        theta = posterior[_parameter(model, observed[name], posterior)[1].name]
        coords.update({d: list(theta[d].values) for d in theta.dims if d not in ("chain", "draw")})
    # never a child of the model in context
    with pm.Model(model=None, coords=coords) as predictive:
        parameters: dict[str, pm.Distribution] = {}
        for name in names:
            _new_records(model, observed[name], posterior, parameters, trials.get(name))
    with predictive:
        draws = pm.sample_posterior_predictive(
            posterior,
            var_names=names,
            random_seed=random_seed,
            progressbar=progressbar,
            return_inferencedata=True,
        )
    dataset = draws[PREDICTIVE_GROUP].to_dataset()
    if not extend_inferencedata:
        return xr.DataTree.from_dict({PREDICTIVE_GROUP: dataset})
    covered = still_certified(idata)
    idata[PREDICTIVE_GROUP] = dataset
    # post-processing of released draws: the ledger covers it if it covered the trace
    return certify(idata) if covered else idata


def _parameter(model, rv, posterior):
    """(likelihood kind, θ's prior variable) of observed ``rv``; group labels never read."""
    name = rv.name
    kind = distribution_name(rv, LIKELIHOODS)
    if kind is None:
        raise NonPrivateModelError(f"{name}: no private posterior predictive for this likelihood")
    params = rv.owner.op.dist_params(rv.owner)
    theta_graph = params[0] if kind in ("normal", "poisson") else params[-1]
    prior_rv, _ = split_parameter(theta_graph, model, name)
    if prior_rv.name not in posterior:
        raise ValueError(f"{name}: the trace has no posterior draws of {prior_rv.name!r}")
    return kind, prior_rv


def _new_records(model, rv, posterior, parameters, trials) -> None:
    """Add ``rv.name`` to the predictive model in context: new records from θ."""
    name = rv.name
    kind, prior_rv = _parameter(model, rv, posterior)
    params = rv.owner.op.dist_params(rv.owner)
    param_dims = [d for d in posterior[prior_rv.name].dims if d not in ("chain", "draw")]
    event = 1 if kind in ("categorical", "multinomial") else 0
    batch_dims = param_dims[: len(param_dims) - event]
    record_dim = f"{name}_record"
    if prior_rv.name not in parameters:
        parameters[prior_rv.name] = pm.Flat(prior_rv.name, dims=param_dims)
    theta = parameters[prior_rv.name]
    # θ with a record axis after the group axes: (..., 1[, K])
    theta = theta[(..., None, slice(None))] if event else theta[..., None]
    dims = (*batch_dims, record_dim, *param_dims[len(batch_dims) :])
    if kind == "bernoulli":
        pm.Bernoulli(name, p=theta, dims=dims)
    elif kind == "categorical":
        pm.Categorical(name, p=theta, dims=dims[:-1])
    elif kind == "poisson":
        pm.Poisson(name, mu=theta, dims=dims)
    elif kind == "normal":
        sigma = _public_scalar(params[1], model, name, "sigma")
        pm.Normal(name, mu=theta, sigma=sigma, dims=dims)
    else:
        n = _trials(params[0], model, name, trials)
        dist = pm.Binomial if kind == "binomial" else pm.Multinomial
        dist(name, n=n, p=theta, dims=dims)


def _refuse_data_containers(variable, name, what) -> None:
    """Refuse ``what`` of ``name`` if it reads a data container: whether ``pm.Data`` is
    private depends on a ``public`` declaration the predictive does not take, and the model
    given here need not be the one ``pymc_dp.sample`` checked (default deny)."""
    containers = sorted(
        str(v.name) for v in ancestors([variable]) if isinstance(v, TensorSharedVariable)
    )
    if containers:
        raise NonPrivateModelError(
            f"{name}: {what} reads pm.Data {containers}; a private predictive takes it only as "
            "a constant in the model (pm.Data may hold private values). Nothing was drawn."
        )


def _public_scalar(variable, model, name, what) -> float:
    if any(v in model.basic_RVs for v in ancestors([variable])):
        raise NonPrivateModelError(f"{name}: {what} must be a constant for a predictive here")
    _refuse_data_containers(variable, name, what)
    value = variable_value(variable)
    if value.size != 1:
        raise NonPrivateModelError(
            f"{name}: {what} is a per-record array (private); no predictive without reading it"
        )
    return float(value.reshape(()))


def _trials(variable, model, name, declared) -> int:
    if declared is None:
        _refuse_data_containers(variable, name, "the number of trials")
    value = variable_value(variable)
    if value.size == 1:
        scalar = int(value.reshape(()))
        return scalar if declared is None else int(declared)
    if declared is None:
        raise NonPrivateModelError(
            f"{name}: its trials are per-record (private); give the number of trials of a new "
            f"record with trials={{'{name}': m}}"
        )
    return int(declared)
