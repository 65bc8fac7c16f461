"""Predict a private analysis's intervals before any record is read: ``pymc_dp.plan``.

The noise-aware posteriors of :func:`pymc_dp.sample` are calibrated (``docs/calibration.md``),
so a simulation from the model's prior predictive predicts the interval widths a release will
give: draw parameters from the prior, records from the likelihood, run the release and the
inference :func:`pymc_dp.sample` runs on them (charged to a throw-away ledger: the records are
simulated, so nothing private is spent), and average the widths. Beside each private width the
non-private one (the exact conjugate posterior where it exists, NUTS otherwise) and the
prior's.

What :func:`pymc_dp.plan` reads of the model is public: its structure and prior hyperparameters, the
number of records (public under ``replace-one``, the neighbouring relation it supports), the
declared ``data_bounds``, and arrays declared public. It never reads an observed value: the
model is cloned with the observed values replaced by simulated ones. Any other ``pm.Data``
array (group labels, covariates, trials) is private unless declared public, and ``plan``
needs a public stand-in for it (``data={name: array}``: for example labels drawn with the
group sizes you expect).

The average over simulated data sets is the expected width over the prior (the calibration
study's "realised mean width"); a single release's width varies around it (column
``width_private_sd``).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.model.fgraph import ModelNamed, ModelObservedRV, fgraph_from_model, model_from_fgraph
from pytensor.graph.traversal import ancestors

from pymc_dp.analysis.inputs import classify_inputs
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.ledger import PrivacyLedger, validate_epsilon
from pymc_dp.reference import exact_conjugate_posterior
from pymc_dp.sampling import sample
from pymc_dp.traces import quiet_unreleased

__all__ = ["INFORMATIVE_SHARE", "LITTLE_INFORMATION", "Allocation", "allocate", "plan"]

INFORMATIVE_SHARE = 0.5
"""A release is *informative* for a parameter when its private interval is at most this share
of the prior's interval width (the data at least halve the prior's uncertainty)."""
LITTLE_INFORMATION = 0.8
"""``plan`` warns when a parameter's mean private width is above this share of the prior's."""

_REFUSED_OPTIONS = ("ledger", "session", "budget", "step", "noise_rng", "noise_backend", "model")
_BISECTIONS = 5
_PRIOR_DRAWS = 1000


def plan(
    epsilon: float | Sequence[float],
    *,
    model: pm.Model | None = None,
    target_width: float | None = None,
    var_names: Sequence[str] | None = None,
    data: Mapping[str, np.ndarray] | None = None,
    datasets: int = 20,
    draws: int = 500,
    tune: int = 500,
    interval: float = 0.9,
    random_seed: int | None = None,
    **sample_options,
) -> pd.DataFrame:
    """Predict the private intervals :func:`pymc_dp.sample` will give, before spending ε.

    Simulates ``datasets`` data sets from the model's prior predictive (with the model's number
    of records), releases and samples each as ``pymc_dp.sample(epsilon=ε, **sample_options)``
    does — charged to a throw-away ledger, since the records are simulated — and averages the
    central ``interval`` widths. The same data sets and noise draws serve every ε (common
    random numbers), so widths compare across ε without simulation noise between them.

    Parameters
    ----------
    epsilon : float or sequence of float
        The ε to try (each the *total* of one ``pymc_dp.sample`` call).
    model : pm.Model, optional
        The model you will sample (from context by default). Only its structure, its shapes,
        public constants and declared-public arrays are read; never an observed value.
    target_width : float, optional
        Also find the smallest ε (by bisection in log ε between the given ε) at which every
        chosen parameter's mean private width is at most ``target_width``; it is in
        ``result.attrs["epsilon_for_target"]`` and its rows are in the table.
    var_names : sequence of str, optional
        Free variables to report (default: every free variable of the model); one row per
        element of each, per ε.
    data : dict, optional
        ``{pm.Data name: array}``: public stand-ins, of the same shape, for the model's private
        arrays other than observed values (group labels, covariates, trials). Required for
        each such array that is not declared ``public``.
    datasets : int
        Simulated data sets (default 20; the mean width's Monte Carlo error is
        ``width_private_sd / sqrt(datasets)``).
    draws, tune : int
        Posterior draws and tuning steps of each (one-chain) inference.
    interval : float
        Probability of the central intervals (default 0.9).
    random_seed : int, optional
        Seeds the simulation, the noise and the samplers.
    **sample_options
        Passed to :func:`pymc_dp.sample` as for the real run: ``data_bounds``,
        ``neighbouring`` (``"replace-one"`` only), ``public``, ``mechanism``, ``noise``,
        ``delta``, ``covariate_bins``, ``inference``, …; not ``ledger``, ``session``,
        ``budget``, ``step``, ``noise_rng`` or ``noise_backend`` (a plan spends nothing).

    Returns
    -------
    pandas.DataFrame
        One row per (parameter element, ε): ``parameter``, ``epsilon``, ``width_private``
        (mean over data sets), ``width_private_sd``, ``width_nonprivate``, ``width_ratio``
        (private / non-private), ``width_prior`` (the prior's interval), ``informative``
        (share of data sets whose private interval is at most
        :data:`~pymc_dp.planning.INFORMATIVE_SHARE` of the prior's) and
        ``little_information`` (mean private width above
        :data:`~pymc_dp.planning.LITTLE_INFORMATION` of the prior's). ``attrs``:
        ``datasets``, ``draws``, ``interval``, ``records`` (per observed variable),
        ``neighbouring`` and, with ``target_width``, ``target_width`` and
        ``epsilon_for_target``.

    Raises
    ------
    NonPrivateModelError
        A private array without a public stand-in in ``data`` (named); ``neighbouring``
        ``"add-remove-one"`` (the number of records is then private).
    ValueError
        Bad ε, ``target_width``, options or stand-ins (shape, non-finite values); a
        ``target_width`` no ε up to the largest given reaches (with the widths there); a
        model whose prior cannot be simulated (an improper prior: named).

    Warns
    -----
    UserWarning
        For each ε at which some parameter's release will carry little information.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.zeros(100, dtype=int)  # 100 private 0/1 records: only their number is read
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    ...     table = pymc_dp.plan([0.1, 1.0], datasets=5, draws=300, tune=0, random_seed=1)
    >>> list(table.columns[:5])
    ['parameter', 'epsilon', 'width_private', 'width_private_sd', 'width_nonprivate']
    >>> table[["parameter", "epsilon"]].values.tolist()
    [['p', 0.1], ['p', 1.0]]
    >>> bool((table["width_private"] > table["width_nonprivate"]).all())
    True
    """
    grid = _epsilons(epsilon)
    if target_width is not None and not (math.isfinite(target_width) and target_width > 0):
        raise ValueError(f"target_width must be a finite number > 0, got {target_width!r}")
    simulation = _Simulation(
        modelcontext(model),
        var_names,
        data,
        datasets,
        draws,
        tune,
        interval,
        random_seed,
        sample_options,
    )
    results = {eps: simulation.private(eps) for eps in grid}
    found = None
    if target_width is not None:
        found = _search(grid, results, simulation.private, target_width, simulation.labels)
    table = _table(results, simulation.nonprivate, simulation.prior_width, simulation.labels)
    table.attrs.update(simulation.design())
    if target_width is not None:
        table.attrs.update(target_width=float(target_width), epsilon_for_target=found)
    _warn_little_information(table)
    return table


@dataclass(frozen=True)
class Allocation:
    """An ε split across a model's releases, chosen before any release by :func:`pymc_dp.allocate`.

    Attributes
    ----------
    epsilon : dict
        ``{observed name: ε}``: pass it as ``pymc_dp.sample(epsilon=allocation.epsilon)``. Sums
        to the total given.
    widths : pandas.DataFrame
        One row per chosen parameter element: ``width_equal`` and ``width_allocated`` (mean
        private widths predicted under the equal split and under this one, on the same
        simulated data sets and noise draws), ``width_nonprivate``.
    variance_ratio : float
        The objective (the chosen parameters' private variances, each relative to its
        non-private variance, summed) under this split over its value under the equal split:
        below 1 is a gain.
    """

    epsilon: dict[str, float]
    widths: pd.DataFrame
    variance_ratio: float

    def __repr__(self) -> str:
        split = ", ".join(f"{k}={v:.3g}" for k, v in self.epsilon.items())
        return (
            f"Allocation(epsilon={{{split}}}, variance_ratio={self.variance_ratio:.3g} "
            "against the equal split)"
        )


def allocate(
    epsilon: float,
    *,
    model: pm.Model | None = None,
    var_names: Sequence[str] | None = None,
    data: Mapping[str, np.ndarray] | None = None,
    datasets: int = 20,
    draws: int = 500,
    tune: int = 500,
    minimum_share: float = 0.05,
    random_seed: int | None = None,
    **sample_options,
) -> Allocation:
    """Split a total ε across a model's releases to make the named parameters most precise.

    Each observed variable is one release of :func:`pymc_dp.sample` (``epsilon={name: ε}``).
    With the simulation of :func:`plan` (nothing private read, nothing spent), the private
    variance of each chosen parameter j is modelled as its non-private variance plus one term
    per release r that falls as 1/ε_r² (the variance of Laplace or Gaussian noise of scale
    Δ/ε_r, carried through the posterior): v_j = v_j⁰ + Σ_r c_jr / ε_r². The c_jr are measured
    from two simulations per release (the equal split, and the split with ε_r halved, on the
    same data sets and noise draws). The sum Σ_j v_j / v_j⁰ is then least, under Σ_r ε_r = ε,
    at ε_r ∝ (Σ_j c_jr / v_j⁰)^{1/3} (Lagrange); every release keeps at least
    ``minimum_share`` of ε, since each must be released to be sampled. The split is then
    simulated and compared with the equal split (``Allocation.widths``,
    ``Allocation.variance_ratio``).

    Parameters
    ----------
    epsilon : float
        Total ε of the run.
    model, var_names, data, datasets, draws, tune, random_seed, **sample_options
        As for :func:`plan`. ``var_names`` names the parameters to make precise (default:
        every free variable).
    minimum_share : float
        Least share of ε any release gets (default 0.05).

    Returns
    -------
    pymc_dp.planning.Allocation

    Raises
    ------
    ValueError
        A model with one observed variable (one release: it gets all of ε), bad options, and
        the errors of :func:`plan`.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome, reason = np.zeros(200, dtype=int), np.zeros(200, dtype=int)  # private records
    >>> with pm.Model():
    ...     rate = pm.Beta("rate", 1, 1)
    ...     share = pm.Dirichlet("share", np.ones(4))
    ...     y = pm.Bernoulli("searched", p=rate, observed=outcome)
    ...     r = pm.Categorical("reason", p=share, observed=reason)
    ...     allocation = pymc_dp.allocate(0.3, var_names=["rate"], datasets=4, draws=200,
    ...                                   tune=0, random_seed=1)
    >>> allocation  # nearly all of ε to the release that informs the rate
    Allocation(epsilon={searched=0.285, reason=0.015}, variance_ratio=0.507 against the equal split)
    >>> round(sum(allocation.epsilon.values()), 10)
    0.3
    """
    total = validate_epsilon(float(epsilon))
    if not 0 <= minimum_share < 1:
        raise ValueError(f"minimum_share must be in [0, 1), got {minimum_share!r}")
    model = modelcontext(model)
    releases = [rv.name for rv in model.observed_RVs]
    if len(releases) < 2:
        raise ValueError(
            f"{releases}: one release, which gets all of epsilon; allocate splits ε across "
            "two or more observed variables"
        )
    if minimum_share * len(releases) >= 1:
        raise ValueError(
            f"minimum_share {minimum_share:g} × {len(releases)} releases leaves nothing to allocate"
        )
    simulation = _Simulation(
        model, var_names, data, datasets, draws, tune, 0.9, random_seed, sample_options
    )
    equal = {name: total / len(releases) for name in releases}
    base = _variance(simulation.private(equal))
    nonprivate = _variance(simulation.nonprivate)
    weights = 1.0 / nonprivate
    cost = {}
    for name in releases:
        halved = {**equal, name: equal[name] / 2}
        loss = _variance(simulation.private(halved)) - base
        # v(e/2) − v(e) = c (4/e² − 1/e²) = 3c / e²
        coefficient = np.maximum(loss, 0.0) * equal[name] ** 2 / 3
        cost[name] = float(np.sum(weights * coefficient))
    split = _split(cost, total, minimum_share)
    allocated = _variance(simulation.private(split))
    ratio = float(np.sum(allocated * weights) / np.sum(base * weights))
    widths = pd.DataFrame(
        {
            "parameter": simulation.labels,
            "width_equal": simulation.last_widths[_key(equal)],
            "width_allocated": simulation.last_widths[_key(split)],
            "width_nonprivate": simulation.nonprivate.mean(axis=0),
        }
    )
    return Allocation(epsilon=split, widths=widths, variance_ratio=ratio)


def _key(epsilon) -> tuple:
    """A hashable key of an ε (a number or a mapping)."""
    if isinstance(epsilon, Mapping):
        return tuple(sorted((k, float(v)) for k, v in epsilon.items()))
    return (float(epsilon),)


def _split(cost: Mapping[str, float], total: float, minimum_share: float) -> dict[str, float]:
    """ε_r ∝ cost_r^{1/3} with a floor of ``minimum_share`` · total (water-filling)."""
    names = list(cost)
    floor = minimum_share * total
    free = set(names)
    split: dict[str, float] = {}
    while True:
        weights = {n: max(cost[n], 0.0) ** (1 / 3) for n in free}
        left = total - floor * (len(names) - len(free))
        norm = sum(weights.values())
        trial = {n: (left * weights[n] / norm if norm > 0 else left / len(free)) for n in free}
        below = {n for n, e in trial.items() if e < floor}
        if not below:
            split.update(trial)
            break
        for n in below:
            split[n] = floor
        free -= below
    return {n: split[n] for n in names}


def _variance(widths: np.ndarray) -> np.ndarray:
    """Mean posterior variance per parameter from interval widths (data sets × parameters):
    a central 90% interval of a near-Gaussian posterior is 2 · 1.645 sd wide."""
    return np.mean((np.asarray(widths) / (2 * 1.6448536269514722)) ** 2, axis=0)


class _Simulation:
    """The simulated data sets of a plan and the inferences run on them (see :func:`plan`)."""

    def __init__(
        self, model, var_names, data, datasets, draws, tune, interval, random_seed, options
    ) -> None:
        self.options = _options(options)
        if datasets < 2 or draws < 20 or tune < 0:
            raise ValueError(
                f"need datasets >= 2, draws >= 20, tune >= 0; got {datasets}, {draws}, {tune}"
            )
        if not 0 < interval < 1:
            raise ValueError(f"interval must be in (0, 1), got {interval!r}")
        self.template = _planning_model(model, data or {}, self.options.get("public", ()))
        self.names = _var_names(self.template, var_names)
        rng = np.random.default_rng(random_seed)
        prior, simulated = _simulate(self.template, datasets, rng, self.names)
        simulated = _clip_to_bounds(simulated, self.options.get("data_bounds") or {})
        self.seeds = [int(s) for s in rng.integers(0, 2**31, size=datasets)]
        self.models = [_with_observations(self.template, values) for values in simulated]
        self.draws, self.tune, self.interval = int(draws), int(tune), float(interval)
        self.quantiles = ((1 - interval) / 2, (1 + interval) / 2)
        self.nonprivate = np.array(
            [
                _widths(_nonprivate(m, draws, tune, s), self.names, self.quantiles)
                for m, s in zip(self.models, self.seeds, strict=True)
            ]
        )
        self.prior_width = _widths(prior, self.names, self.quantiles)
        self.labels = _labels(self.template, self.names)
        self.last_widths: dict[tuple, np.ndarray] = {}

    def private(self, epsilon) -> np.ndarray:
        """Private interval widths, data sets × parameter elements, at ``epsilon``."""
        widths = np.array(
            [
                _widths(
                    _private(m, epsilon, self.draws, self.tune, s, self.options),
                    self.names,
                    self.quantiles,
                )
                for m, s in zip(self.models, self.seeds, strict=True)
            ]
        )
        self.last_widths[_key(epsilon)] = widths.mean(axis=0)
        return widths

    def design(self) -> dict:
        return {
            "datasets": len(self.models),
            "draws": self.draws,
            "interval": self.interval,
            "records": {rv.name: int(np.prod(_shape(rv))) for rv in self.template.observed_RVs},
            "neighbouring": self.options.get("neighbouring", "replace-one"),
        }


# --- inputs ---------------------------------------------------------------------------------


def _epsilons(epsilon) -> list[float]:
    values = [epsilon] if np.ndim(epsilon) == 0 else list(epsilon)
    if not values:
        raise ValueError("epsilon: give at least one value")
    return sorted({validate_epsilon(float(e)) for e in values})


def _options(options: dict) -> dict:
    refused = sorted(set(options) & set(_REFUSED_OPTIONS))
    if refused:
        raise ValueError(
            f"plan spends nothing and samples simulated records: {refused} cannot be given "
            "(pass them to pymc_dp.sample for the real run)"
        )
    if options.get("neighbouring", "replace-one") != "replace-one":
        raise NonPrivateModelError(
            "plan simulates data sets of the model's number of records, which is private under "
            "neighbouring='add-remove-one'; plan under 'replace-one' with a public count of "
            "records (the model built on a placeholder of that length)"
        )
    return dict(options)


def _planning_model(model: pm.Model, data: Mapping[str, np.ndarray], public: Iterable[str]):
    """A clone of ``model`` whose observed values are zeros of their shape and whose private
    data containers hold the caller's public stand-ins; the user's model is not touched."""
    public = set(public)
    unknown = sorted(set(data) - {variable.name for variable in model.data_vars})
    if unknown:
        raise ValueError(f"data names no pm.Data of the model: {unknown}")
    # the package's one classifier of what a model reads (default deny): every private array
    # but the observed values needs a stand-in, and only a pm.Data container can take one.
    # It runs on a clone whose records are zeros, so that no check of it (a public array
    # equal to the observed values, say) can depend on the records.
    zeros = {rv.name: np.zeros(_shape(rv), dtype=rv.dtype) for rv in model.observed_RVs}
    blank = _with_observations(model, zeros)
    inputs = classify_inputs(blank, public, "replace-one")
    containers = {variable: variable.name for variable in blank.data_vars}
    observed_values = set(ancestors([blank.rvs_to_values[rv] for rv in blank.observed_RVs]))
    missing, constants = [], []
    for source in inputs.private:
        if source in observed_values or containers.get(source) in data:
            continue
        (missing if source in containers else constants).append(source)
    if constants:
        raise NonPrivateModelError(
            f"{sorted(inputs.labels[s] for s in constants)} are private and plan cannot read "
            "them or replace them: wrap each as pm.Data('name', array) and give a public "
            "stand-in of the same shape, data={'name': array}, or declare it public=[...]"
        )
    if missing:
        raise NonPrivateModelError(
            f"pm.Data {sorted(containers[s] for s in missing)} are private (not declared "
            "public) and plan cannot read them: give a public stand-in of the same shape for "
            "each, data={name: array} (e.g. labels drawn with the group sizes you expect), or "
            "declare them public=[...]"
        )
    stand_ins = {}
    for name, values in data.items():
        current = np.asarray(model[name].get_value())
        values = np.asarray(values)
        if values.shape != current.shape:
            raise ValueError(
                f"data['{name}']: shape {values.shape}, the model's is {current.shape}"
            )
        if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
            raise ValueError(
                f"data['{name}']: {int((~np.isfinite(values)).sum())} non-finite values"
            )
        stand_ins[name] = values.astype(current.dtype)
    return _with_observations(model, zeros, stand_ins)


def _shape(rv) -> tuple[int, ...]:
    return tuple(int(s) for s in rv.shape.eval())


def _var_names(model: pm.Model, var_names) -> list[str]:
    free = [rv.name for rv in model.free_RVs]
    if var_names is None:
        return free
    chosen = list(var_names)
    unknown = [name for name in chosen if name not in free]
    if unknown:
        raise ValueError(f"var_names: {unknown} are not free variables of the model ({free})")
    return chosen


def _labels(model: pm.Model, names: list[str]) -> list[str]:
    labels = []
    for name in names:
        shape = _shape(model[name])
        dims = model.named_vars_to_dims.get(name) or (None,) * len(shape)
        coords = [
            list(model.coords[d]) if d is not None and model.coords.get(d) is not None else range(s)
            for d, s in zip(dims, shape, strict=True)
        ]
        if not shape:
            labels.append(name)
            continue
        for index in np.ndindex(*shape):
            labels.append(
                f"{name}[{', '.join(str(c[i]) for c, i in zip(coords, index, strict=True))}]"
            )
    return labels


# --- simulation and inference -----------------------------------------------------------------


def _simulate(model: pm.Model, datasets: int, rng, names):
    """Prior draws (as a posterior-like dataset) and ``datasets`` simulated observations."""
    for rv in model.free_RVs:
        if getattr(rv.owner.op, "name", "") in ("flat", "half_flat"):
            raise ValueError(
                f"{rv.name}: an improper prior cannot be simulated; give it a proper one"
            )
    observed = [rv.name for rv in model.observed_RVs]
    with _quiet():
        # the prior's widths from 1,000 draws of the parameters alone; the data sets from as
        # many joint draws as there are data sets (records can be many: never 1,000 copies)
        prior = pm.sample_prior_predictive(
            draws=_PRIOR_DRAWS,
            model=model,
            var_names=names,
            random_seed=rng,
            return_inferencedata=True,
        )
        joint = pm.sample_prior_predictive(
            draws=datasets,
            model=model,
            var_names=observed,
            random_seed=rng,
            return_inferencedata=True,
        )
    predictive = joint["prior_predictive"]
    simulated = [
        {
            rv.name: np.asarray(predictive[rv.name].values[0, s], dtype=rv.dtype)
            for rv in model.observed_RVs
        }
        for s in range(datasets)
    ]
    return prior["prior"].to_dataset(), simulated


def _clip_to_bounds(simulated, bounds: Mapping) -> list[dict]:
    """Simulated records clamped into their declared ``data_bounds`` (the prior predictive can
    leave a declared range that real records respect by declaration)."""
    out = []
    for values in simulated:
        clipped = dict(values)
        for name, pair in bounds.items():
            if name in clipped and np.ndim(pair) == 1 and len(pair) == 2:
                clipped[name] = np.clip(clipped[name], pair[0], pair[1]).astype(clipped[name].dtype)
        out.append(clipped)
    return out


def _with_observations(
    model: pm.Model,
    values: Mapping[str, np.ndarray],
    stand_ins: Mapping[str, np.ndarray] | None = None,
) -> pm.Model:
    """A clone of ``model`` whose observed values are the constants ``values`` (by observed
    name; a ``pm.Data`` container that held records is dropped) and whose ``pm.Data``
    containers named in ``stand_ins`` hold those arrays. The model itself is not touched."""
    fgraph, memo = fgraph_from_model(model)
    for rv in model.observed_RVs:
        node = memo[rv].owner
        if not isinstance(node.op, ModelObservedRV):  # pragma: no cover - PyMC's invariant
            raise TypeError(f"{rv.name}: not an observed variable of the cloned graph")
        value = node.inputs[1]
        simulated = np.asarray(values[rv.name])
        read = set(ancestors([value]))
        containers = [  # pm.Data outputs whose content the observed value reads
            out
            for out in fgraph.outputs
            if out.owner is not None
            and isinstance(out.owner.op, ModelNamed)
            and out.owner.inputs[0] in read
        ]
        if containers:
            # a pm.Data container of records (read through a cast, say): dropped, and every
            # reader of its content reads the simulated records; its records never reach
            # the clone
            for container in containers:
                content = container.owner.inputs[0]
                fgraph.remove_output(fgraph.outputs.index(container))
                constant = pt.as_tensor(simulated.astype(content.dtype))
                fgraph.replace(content, constant, import_missing=True)
        else:
            fgraph.replace(value, pt.as_tensor(simulated), import_missing=True)
    for out in list(fgraph.outputs):
        if out.owner is not None and isinstance(out.owner.op, ModelNamed):
            if out.owner.op.name in (stand_ins or {}):
                content = pt.as_tensor(stand_ins[out.owner.op.name])
                fgraph.replace(out.owner.inputs[0], content, import_missing=True)
    return model_from_fgraph(fgraph, mutate_fgraph=True)


@contextlib.contextmanager
def _quiet():
    with quiet_unreleased(("pymc", "pytensor", "pymc_dp")), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _nonprivate(model: pm.Model, draws: int, tune: int, seed: int):
    with _quiet():
        try:
            return exact_conjugate_posterior(model, draws=draws, chains=1, rng=seed)["posterior"]
        except (NonPrivateModelError, ValueError, KeyError):
            idata = pm.sample(
                draws,
                tune=tune,
                chains=1,
                model=model,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
            )
    return idata["posterior"]


def _private(model: pm.Model, epsilon: float, draws: int, tune: int, seed: int, options):
    with _quiet():
        idata = sample(
            draws,
            tune=tune,
            chains=1,
            model=model,
            epsilon=epsilon,
            ledger=PrivacyLedger(),  # simulated records: nothing private is spent
            noise_backend="numpy",
            noise_rng=np.random.default_rng(seed),
            random_seed=seed,
            progressbar=False,
            **options,
        )
    return idata["posterior"]


def _widths(posterior, names: list[str], quantiles) -> np.ndarray:
    widths = []
    for name in names:
        draws = np.asarray(posterior[name].values)
        draws = draws.reshape(-1, *draws.shape[2:]) if draws.ndim >= 2 else draws
        low, high = np.quantile(draws, quantiles, axis=0)
        widths.extend(np.ravel(high - low))
    return np.asarray(widths)


# --- results ----------------------------------------------------------------------------------


def _search(grid, results, private, target: float, labels) -> float:
    """Smallest ε reaching ``target`` for every parameter: the first grid ε that does, refined
    by bisection in log ε against the grid ε before it."""
    reach = [eps for eps in grid if results[eps].mean(axis=0).max() <= target]
    if not reach:
        widest = results[grid[-1]].mean(axis=0)
        listed = ", ".join(f"{label} {w:.3g}" for label, w in zip(labels, widest, strict=True))
        raise ValueError(
            f"target_width {target:g} is not reached at any ε given (up to {grid[-1]:g}): the "
            f"mean private widths there are {listed}. Try larger ε, or a model with more "
            "records."
        )
    high = reach[0]
    below = [eps for eps in grid if eps < high]
    if not below:
        return high
    low = below[-1]
    for _ in range(_BISECTIONS):
        middle = math.sqrt(low * high)
        results[middle] = private(middle)
        if results[middle].mean(axis=0).max() <= target:
            high = middle
        else:
            low = middle
    return high


def _table(results, nonprivate, prior_width, labels) -> pd.DataFrame:
    rows = []
    nonprivate_mean = nonprivate.mean(axis=0)
    for eps in sorted(results):
        widths = results[eps]
        mean = widths.mean(axis=0)
        for j, label in enumerate(labels):
            rows.append(
                {
                    "parameter": label,
                    "epsilon": eps,
                    "width_private": mean[j],
                    "width_private_sd": widths[:, j].std(ddof=1),
                    "width_nonprivate": nonprivate_mean[j],
                    "width_ratio": mean[j] / nonprivate_mean[j],
                    "width_prior": prior_width[j],
                    "informative": float(
                        np.mean(widths[:, j] <= INFORMATIVE_SHARE * prior_width[j])
                    ),
                    "little_information": bool(mean[j] > LITTLE_INFORMATION * prior_width[j]),
                }
            )
    return pd.DataFrame(rows)


def _warn_little_information(table: pd.DataFrame) -> None:
    poor = table[table["little_information"]]
    for eps, rows in poor.groupby("epsilon"):
        listed = ", ".join(
            f"{r.parameter} ({r.width_private / r.width_prior:.0%} of the prior's width)"
            for r in rows.itertuples()
        )
        warnings.warn(
            f"at epsilon={eps:g} the release will carry little information about {listed}: "
            "its interval will be nearly as wide as the prior's. Spend more ε here, fewer "
            "parameters, or more records.",
            UserWarning,
            stacklevel=3,
        )
