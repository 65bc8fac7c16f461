"""PyMC step method for the naive-Bayes HMM (:func:`pymc_dp.models.naive_bayes_hmm`)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_value_vars_from_user_vars

from pymc_dp.hmm.cells import release_event_of
from pymc_dp.hmm.gibbs import HMMData, sweep
from pymc_dp.hmm.noise_aware import ReleasedCounts, initial_latent_state, noise_aware_sweep
from pymc_dp.inference import check_inference
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of
from pymc_dp.steps.guard import check_route, in_route
from pymc_dp.steps.noise import SecretNoise
from pymc_dp.steps.transforms import compile_transforms

__all__ = ["NaiveBayesHMMGibbs"]

METHODS = ("ffbs", "collapsed")
"""How the step reads released counts: as exact (plug-in) or as Laplace-noisy observations."""


class NaiveBayesHMMGibbs(SecretNoise, BlockedStep):
    """Blocked Gibbs sweep of a naive-Bayes HMM: states, emissions, transitions.

    One ``step`` is one full sweep (Foulds et al. 2016, App. E):

    * states z of every region — ``method="ffbs"``: one exact joint draw by forward-filtering
      backward-sampling, vectorised over regions (:func:`pymc_dp.hmm.gibbs.ffbs`);
      ``method="collapsed"``: the paper's single-site updates with A integrated out (eq. 68);
    * emissions θ^{(k,d)} ~ Dirichlet(n_{d,k,:} + β) (eq. 69) — with a truncated model, one
      Fang et al. (2000) truncated-Beta Gibbs sweep per row;
    * transitions A_k ~ Dirichlet(transition counts + α).

    With ``inference="noise-aware"`` (released counts only) the counts are read as Laplace
    observations of latent true counts (Bernstein & Sheldon 2018; Ju et al. 2022) and one step
    is one sweep of :func:`pymc_dp.hmm.noise_aware.noise_aware_sweep`: states given the latent
    counts by FFBS, latent counts, cell rates, then emissions on the latent counts and
    transitions. Its auxiliary variables (cell rates, latent counts) live in the step, not in
    the trace. A point that is not the one this step returned last starts a new chain: the
    auxiliaries and the emissions are then re-initialised from the release
    (:func:`pymc_dp.hmm.noise_aware.initial_latent_state`), so the emissions of the initial
    point (``initvals``) are not used; the chain's first ``collapsed_warmup`` sweeps draw the
    states with every latent count integrated out.

    At ``temperature`` T > 1 every update draws from the joint density raised to 1/T (Foulds
    eq. 10, 19): the one-posterior-sample mechanism. The step itself releases nothing and
    charges nothing; privacy comes from what it is given — released counts (Laplace) — or from
    how its draws are released (:func:`pymc_dp.sample` with ``mechanism="ops"`` keeps only the
    last draw and charges the ledger). On raw counts at T = 1 it is a non-private sampler, so
    outside :func:`pymc_dp.sample` it steps only on counts returned by
    :func:`pymc_dp.hmm.release_cell_counts` (the ``noisy`` flag alone is not enough: anyone can
    set it).

    Parameters
    ----------
    vars : list, optional
        Must be all of the HMM's variables (the default).
    method : {"ffbs", "collapsed"}
    temperature : float
        T >= 1 (the collapsed sampler needs T = 1).
    inference : {"plugin", "noise-aware"}
        ``"plugin"`` (default): the counts are used as if exact (Foulds et al. 2016, §4.2).
        ``"noise-aware"``: the Laplace noise of the release is part of the model
        (:mod:`pymc_dp.hmm.noise_aware`); needs counts returned by
        :func:`pymc_dp.hmm.release_cell_counts` (whose ledger event gives the noise scale),
        ``method="ffbs"`` and T = 1.
    collapsed_warmup : int
        Noise-aware only: sweeps at the start of each chain whose state update integrates out
        every latent count (``collapsed_states=True`` of
        :func:`~pymc_dp.hmm.noise_aware.noise_aware_sweep`; far costlier per sweep, faster to
        organise the states). Default 0.
    model : pm.Model, optional
        A model built by :func:`~pymc_dp.models.naive_bayes_hmm`.
    noise_seed : int, optional
        On unreleased counts the draws are the privacy noise: secret entropy is mixed into
        every chain's generator (:mod:`pymc_dp.steps.noise`), ``noise_seed`` or fresh OS
        entropy. On released counts the draws are post-processing and ``random_seed``
        reproduces them.
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.

    Raises
    ------
    ValueError
        If the model is not a naive-Bayes HMM, ``vars`` is a strict subset, the method or the
        inference is unknown, or T < 1; with ``inference="noise-aware"``, if the counts are
        not a Laplace release, the method is not "ffbs" or T != 1.
    NonPrivateModelError
        From ``step``, if the counts were not released and the step was not built by
        :func:`pymc_dp.sample`.

    Examples
    --------
    ``pymc_dp.sample`` releases the count tensor once (Laplace) and runs this step on it:

    >>> import numpy as np
    >>> import pymc_dp
    >>> from pymc_dp.hmm.simulate import simulate_records
    >>> from pymc_dp.models import naive_bayes_hmm
    >>> simulated = simulate_records(2, 5, 2, [2, 3], 500, np.random.default_rng(0))
    >>> model = naive_bayes_hmm(simulated.counts, n_states=2)  # 2 regions × 5 times, 2 features
    >>> idata = pymc_dp.sample(20, tune=20, chains=1, model=model, epsilon=5.0, random_seed=1,
    ...                        progressbar=False)
    >>> sorted(idata.posterior.data_vars)
    ['emission_f0', 'emission_f1', 'states', 'transition']
    """

    name = "naive_bayes_hmm_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {
        "occupied_states": (np.int64, []),
        "temperature": (np.float64, []),
    }
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        method: str = "ffbs",
        temperature: float = 1.0,
        inference: str = "plugin",
        collapsed_warmup: int = 0,
        model: pm.Model | None = None,
        noise_seed: int | None = None,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        spec = hmm_spec_of(model)
        if spec is None:
            raise ValueError("NaiveBayesHMMGibbs needs a model built by naive_bayes_hmm")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if not np.isfinite(temperature) or temperature < 1:
            raise ValueError(f"temperature must be >= 1, got {temperature!r}")
        if method == "collapsed" and temperature != 1:
            raise ValueError("the collapsed sampler (eq. 68) runs at temperature 1 only")
        check_inference(inference)
        if int(collapsed_warmup) != collapsed_warmup or collapsed_warmup < 0:
            raise ValueError(f"collapsed_warmup must be an integer >= 0, got {collapsed_warmup!r}")
        if collapsed_warmup and inference != "noise-aware":
            raise ValueError("collapsed_warmup is for inference='noise-aware'")
        event = release_event_of(spec.counts)
        if inference == "noise-aware":
            if event is None or not event.noise_scale:
                raise ValueError(
                    "inference='noise-aware' reads the counts as a Laplace release: build the "
                    "model on the counts pymc_dp.hmm.release_cell_counts returned (their ledger "
                    "event gives the noise scale), or use pymc_dp.sample(mechanism='laplace', "
                    "inference='noise-aware')"
                )
            if method != "ffbs" or temperature != 1:
                raise ValueError(
                    "inference='noise-aware' samples the states by FFBS at temperature 1 only"
                )
        rvs = [model[name] for name in spec.variable_names]
        value_vars = [model.rvs_to_values[rv] for rv in rvs]
        if vars is not None:
            chosen = {v.name for v in get_value_vars_from_user_vars(vars, model)}
            if chosen != {v.name for v in value_vars}:
                raise ValueError(
                    f"NaiveBayesHMMGibbs updates all of {list(spec.variable_names)} together"
                )
        self.vars = value_vars
        self.method = method
        self.temperature = float(temperature)
        self.inference = inference
        self.collapsed_warmup = int(collapsed_warmup)
        self.data = HMMData.from_tensor(
            spec.counts.counts,
            spec.counts.n_categories,
            spec.n_states,
            alpha=spec.alpha,
            beta=spec.beta,
            lower=spec.lower,
        )
        self._names = [v.name for v in value_vars]
        self._forward = compile_transforms(model, rvs[1:], "forward")
        self._backward = compile_transforms(model, rvs[1:], "backward")
        self._released = (
            ReleasedCounts.from_data(self.data, event.noise_scale)
            if inference == "noise-aware"
            else None
        )
        self._latent = None  # noise-aware auxiliaries of the running chain
        self._chain_sweeps = 0  # sweeps of the running chain
        self._returned: dict | None = None  # the point this step returned last
        # released = returned by release_cell_counts (which recorded the event), not merely
        # flagged noisy: the flag is anyone's to set, the marker is not
        released = event is not None
        self._init_noise(noise_seed, rng, secret=not released)
        self._sanctioned = in_route() or released

    def _read(self, point: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        data = self.data
        states = np.asarray(point[self._names[0]], dtype=np.int64)
        transition, *emissions = self._backward(*(point[name] for name in self._names[1:]))
        emission = np.zeros((data.n_states, data.n_features, data.width))
        for d, values in enumerate(emissions):
            emission[:, d, : data.n_categories[d]] = values
        if data.lower is not None:  # the transform's round trip can land a hair below a0
            floor = np.where(data.mask, data.lower[:, None], 0.0)
            emission = np.maximum(emission, floor)
            emission /= emission.sum(axis=-1, keepdims=True)
        return states, emission, transition

    def _continues(self, point: dict) -> bool:
        """Whether ``point`` is the one this step returned last (same chain)."""
        if self._returned is None:
            return False
        return all(np.array_equal(point[name], self._returned[name]) for name in self._names)

    def _noise_aware_sweep(self, point: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        states, emission, transition = self._read(point)
        if self._latent is None or not self._continues(point):  # a new chain
            emission, self._latent = initial_latent_state(
                self.data, self._released, states, self.rng
            )
            self._chain_sweeps = 0
        states, emission, transition, self._latent = noise_aware_sweep(
            self.data,
            self._released,
            states,
            emission,
            transition,
            self._latent,
            self.rng,
            collapsed_states=self._chain_sweeps < self.collapsed_warmup,
        )
        self._chain_sweeps += 1
        return states, emission, transition

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """One full sweep; returns the new point and the sweep's stats."""
        check_route(self)
        if self._released is not None:
            states, emission, transition = self._noise_aware_sweep(point)
        else:
            states, emission, transition = sweep(
                self.data,
                *self._read(point),
                self.rng,
                temperature=self.temperature,
                method=self.method,
            )
        new_point = dict(point)
        new_point[self._names[0]] = states
        values = self._forward(
            np.maximum(transition, 1e-300),
            *(
                np.maximum(emission[:, d, :size], 1e-300)
                for d, size in enumerate(self.data.n_categories)
            ),
        )
        new_point.update(zip(self._names[1:], values, strict=True))
        if self._released is not None:
            self._returned = {name: np.copy(new_point[name]) for name in self._names}
        stats = {
            "occupied_states": int(np.count_nonzero(np.bincount(states.ravel()))),
            "temperature": self.temperature,
        }
        return new_point, [stats]

    @staticmethod
    def competence(var, has_grad):
        """Never chosen automatically: pass ``step=NaiveBayesHMMGibbs()`` explicitly."""
        return Competence.INCOMPATIBLE
