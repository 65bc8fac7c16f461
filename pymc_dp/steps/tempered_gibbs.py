"""Tempered conjugate Gibbs: every update is an exponential mechanism (Foulds et al. 2016, §4.1).

Each assigned block θ_l (a truncated prior and the observed likelihoods that read it, see
:mod:`pymc_dp.analysis.tempered`) is drawn exactly from Pr(θ_l, θ_¬l, X)^{1/T_l} on its
truncated space (eq. 19; :mod:`pymc_dp.families.tempered`). By the exponential mechanism with
utility log Pr(θ_l, θ_¬l, X), whose sensitivity is Δ_l = Σ_v Δ_v over the block's likelihoods
(eq. 20, with the prior cancelling as in eq. 9; within a declared ``disjoint`` group only the
largest Δ_v counts), one such draw is (2Δ_l/T_l)-DP under replace-one neighbours. A Dirichlet
block is updated by K − 1 exact pair updates (Fang et al. 2000), each an exponential mechanism
of the same cost. The costs of all updates compose.

How the draws are released decides what is spent, and :func:`pymc_dp.sample` charges it:

* every draw released (``mechanism="gibbs-exponential"``): the composition of every update of
  every sweep, tuning included; no convergence assumption;
* only the last draw (``mechanism="ops"``): one exact tempered-posterior draw, 2Δ/T, *if the
  chain has converged*; otherwise the composition above is the guarantee.

The step declares its cost: :attr:`~TemperedConjugateGibbs.sweep_epsilon` per call, also
emitted as the sampler statistic ``privacy_epsilon`` of every draw. The statistics it samples
from are exact, hence private: they are computed at construction, in the parent process, and
never enter a model graph. The step therefore runs only when :func:`pymc_dp.sample` built it
(:func:`pymc_dp.steps.guard.route_context`): the route sets T from ε, removes the data from the
model that PyMC's other samplers see, and charges the ledger. Built anywhere else — on any
model, with or without ``analysis=`` — it refuses to step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_value_vars_from_user_vars

from pymc_dp.analysis.tempered import (
    TemperedBlock,
    TemperedModel,
    analyse_tempered_model,
    prior_parameter_variables,
)
from pymc_dp.errors import NonPrivateModelError, value_free_repr
from pymc_dp.families.tempered import TEMPERING, tempered_draw
from pymc_dp.steps.guard import check_route, in_route
from pymc_dp.steps.noise import SecretNoise
from pymc_dp.steps.parameters import parameter_function
from pymc_dp.steps.transforms import compile_transforms, forward_transform

__all__ = ["TemperedConjugateGibbs"]


@value_free_repr
@dataclass(eq=False)
class _BlockUpdate:
    """One block's tempered update in the model the step runs in; no raw data."""

    value_name: str
    block: TemperedBlock
    statistics: np.ndarray
    temperature: float
    tempering: str
    parameters: Callable[[dict], tuple[np.ndarray, ...]]
    forward: Callable[[np.ndarray], np.ndarray]
    backward: Callable[[np.ndarray], np.ndarray] | None

    def draw(self, rng: np.random.Generator, point: dict) -> np.ndarray:
        block = self.block
        groups = self.statistics.shape[:1]
        param_shape = (*groups, block.shape[-1]) if block.kind == "dirichlet" else groups
        params = tuple(np.broadcast_to(p, param_shape) for p in self.parameters(point))
        current = None
        if self.backward is not None:
            current = np.asarray(self.backward(point[self.value_name])).reshape(param_shape)
        value = tempered_draw(
            block.kind,
            params,
            self.statistics,
            self.temperature,
            (block.lower, block.upper),
            rng,
            current=current,
            part=self.tempering,
        )
        return np.asarray(self.forward(value.reshape(block.shape)), dtype=np.float64)


class TemperedConjugateGibbs(SecretNoise, BlockedStep):
    """Exact tempered conjugate updates of truncated blocks; each update is an exponential
    mechanism (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19–20).

    Parameters
    ----------
    vars : list of variables, optional
        Block variables to update (default: every block of the model's analysis present in
        ``model``).
    temperature : float or dict
        T >= 1 for every block, or ``{prior name: T_l}``. Unequal temperatures give private
        updates but no joint target distribution: use one T for OPS.
    tempering : {"joint", "likelihood"}
        Temper each block's prior and likelihood (Foulds eq. 14, 19; default) or its likelihood
        only (the prior as the mechanism's base measure; same cost).
    model : pm.Model, optional
        The model the step runs in (the data-free tempered model under
        :func:`pymc_dp.sample`; the user's model otherwise).
    analysis : TemperedModel, optional
        Blocks, exact statistics and bounds
        (:func:`~pymc_dp.analysis.tempered.analyse_tempered_model` of the model holding the data).
        Default: analyse ``model``.
    data_bounds, max_trials, disjoint
        Passed to :func:`~pymc_dp.analysis.tempered.analyse_tempered_model` when ``analysis`` is
        None.
    noise_seed : int, optional
        Secret entropy mixed into every chain's generator (:mod:`pymc_dp.steps.noise`): the
        draws are the privacy noise, so ``random_seed`` alone must not reproduce them. Default:
        fresh OS entropy.
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.

    Attributes
    ----------
    update_costs : dict
        ``{observed name: ε per call}``: m·2Δ_v/T_l for each likelihood the step reads, with m
        the number of exponential mechanisms in its block's update.
    sweep_epsilon : float
        ε of one call for one record: the update costs composed (sequentially, parallel within
        declared ``disjoint`` groups).

    Raises
    ------
    NonPrivateModelError
        If a variable is not a block, or the model cannot be sampled at temperature T
        (see :func:`~pymc_dp.analysis.tempered.analyse_tempered_model`); from ``step``, if the step
        was not built by :func:`pymc_dp.sample` (it reads exact private statistics).
    InvalidPrivateDataError
        If a record lies outside its declared domain.
    ValueError
        If a temperature is < 1 or names an unknown block.

    Examples
    --------
    ``pymc_dp.sample(mechanism="ops")`` runs this step at the temperature T = 2Δ/ε and releases
    the last draw (one posterior sample):

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> from pymc_dp.distributions import TruncatedBeta
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=1_000)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = TruncatedBeta("p", 1.0, 1.0, truncation=0.01)  # p in [0.01, 0.99]: Δ is finite
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> idata = pymc_dp.sample(model=model, epsilon=1.0, mechanism="ops", chains=1,
    ...                        random_seed=1, progressbar=False)
    >>> event = pymc_dp.PrivacyLedger.from_datatree(idata).events[0]
    >>> event.mechanism, round(event.temperature, 2), idata.posterior["p"].shape
    ('ops', 9.19, (1, 1))
    """

    name = "tempered_conjugate_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {"privacy_epsilon": (np.float64, [])}
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        temperature: float | Mapping[str, float],
        tempering: str = "joint",
        model: pm.Model | None = None,
        analysis: TemperedModel | None = None,
        data_bounds: Mapping[str, tuple[float, float]] | None = None,
        max_trials: Mapping[str, int] | None = None,
        disjoint: Sequence[Sequence[str]] = (),
        noise_seed: int | None = None,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        # exact private statistics, whatever the model: only a route may run this step
        self._sanctioned = in_route()
        if analysis is None:
            analysis = analyse_tempered_model(
                model, data_bounds=data_bounds, max_trials=max_trials, disjoint=disjoint
            )
        elif data_bounds or max_trials or disjoint:
            raise ValueError("give either an analysis or the options to analyse the model")
        blocks = {block.prior: block for block in analysis.blocks}
        if vars is None:
            rvs = [model[name] for name in blocks if name in model.named_vars]
        else:
            rvs = [model.values_to_rvs[v] for v in get_value_vars_from_user_vars(vars, model)]
        unknown = [rv.name for rv in rvs if rv.name not in blocks]
        if unknown:
            raise NonPrivateModelError(
                f"{unknown} are not truncated conjugate blocks of the model's likelihoods"
            )
        temperatures = _temperatures(temperature, [rv.name for rv in rvs])
        if tempering not in TEMPERING:
            raise ValueError(f"tempering must be one of {TEMPERING}, got {tempering!r}")
        self.vars = [model.rvs_to_values[rv] for rv in rvs]
        self.temperatures = temperatures
        self.update_costs = {
            lik.observed: blocks[rv.name].mechanisms_per_update
            * 2
            * lik.log_likelihood_bound
            / temperatures[rv.name]
            for rv in rvs
            for lik in blocks[rv.name].likelihoods
        }
        self.sweep_epsilon = analysis.compose(self.update_costs)
        self._updates = [
            _block_update(model, rv, blocks[rv.name], temperatures[rv.name], tempering)
            for rv in rvs
        ]
        self._init_noise(noise_seed, rng)

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """Draw every assigned block from its tempered conditional, in order."""
        check_route(self)
        new_point = dict(point)
        for update in self._updates:
            new_point[update.value_name] = update.draw(self.rng, new_point)
        return new_point, [{"privacy_epsilon": self.sweep_epsilon}]

    @staticmethod
    def competence(var, has_grad):
        """Never chosen automatically: the temperature is a privacy decision."""
        return Competence.INCOMPATIBLE


def _temperatures(temperature, names: list[str]) -> dict[str, float]:
    if isinstance(temperature, Mapping):
        unknown = sorted(set(temperature) - set(names))
        missing = sorted(set(names) - set(temperature))
        if unknown or missing:
            raise ValueError(
                f"temperature must name exactly the blocks {names}; unknown {unknown}, "
                f"missing {missing}"
            )
        values = {name: float(temperature[name]) for name in names}
    else:
        values = dict.fromkeys(names, float(temperature))
    bad = {name: t for name, t in values.items() if not (np.isfinite(t) and t >= 1)}
    if bad:
        raise ValueError(f"temperatures must be finite and >= 1 (never sharpen): {bad}")
    return values


def _block_update(
    model: pm.Model, rv, block: TemperedBlock, temperature: float, tempering: str
) -> _BlockUpdate:
    parameters, _ = parameter_function(model, prior_parameter_variables(rv, block.kind))
    backward = None
    if block.kind == "dirichlet":
        backward = _first(compile_transforms(model, [rv], "backward"))
    return _BlockUpdate(
        value_name=model.rvs_to_values[rv].name,
        block=block,
        statistics=block.statistics,
        temperature=temperature,
        tempering=tempering,
        parameters=parameters,
        forward=forward_transform(model, rv),
        backward=backward,
    )


def _first(function: Callable[..., list[np.ndarray]]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda value: function(value)[0]
