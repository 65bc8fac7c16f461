"""BlackJAX's NUTS on a bounded family's private model, compiled once (``nuts_sampler="blackjax"``).

``pymc_dp.sample(..., nuts_sampler="blackjax")`` samples the private model of a bounded
family's release whose log density compiles to JAX (``BoundedFamily.compiles_to_jax``: the
Normal and linear regression; checked before the release) with BlackJAX's NUTS and window
adaptation instead of PyMC's, the whole chain compiled by JAX (Cabezas et al., "BlackJAX:
composable Bayesian inference in JAX", 2024). PyMC's NUTS spends
most of a leapfrog step in Python (about 0.1 ms, whatever the model); the noise-aware
regression's posterior needs ~28 steps per draw with PyMC's dense mass matrix, so its 4,000
iterations take ~17 s there, and ~4.5 s here with ~50 steps per draw on a diagonal one (the
default here: BlackJAX's windowed dense estimate lost a chain in the calibration study; see
``docs/calibration.md`` and ``benchmarks/compile_once.py``). The first call on a
model structure takes 9–14 s, most of it compiling (announced); later calls on a model of the same
structure reuse the compiled chain, since the released values are arguments of the compiled
function, never constants in it (:class:`BlackJAXRunner`, kept with the private model by
:func:`pymc_dp.routes.compiled.compiled_private_model`).

Post-processing of the release like every sampler of the private model: it reads the
released values, the public constants and the priors, no record. Same order as PyMC's route:
refuse → validate → budget → event → release → sample → strip; every option this sampler
cannot honour is refused before the release (:func:`check_blackjax_options`).

Needs the optional ``jax`` and ``blackjax`` packages (``pip install -e ".[calibration]"``).
Chains run one after another in one process (``cores`` is accepted and not used: vectorising
two chains over JAX's ``vmap`` was no faster on two cores, since every step waits for the
longer trajectory). The trace has PyMC's layout: ``posterior`` (free variables and
deterministics, the model's coords and dims) and ``sample_stats`` (``diverging``,
``energy``, ``tree_depth``, ``n_steps``, ``acceptance_rate``, ``lp``, the names of PyMC's
own BlackJAX path, ``pymc.sampling.jax``; and ``step_size``, ``reached_max_treedepth``, as
PyMC's NUTS names them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pymc.exceptions import SamplingError
from pymc.util import get_default_varnames
from pytensor.graph.replace import clone_replace

from pymc_dp.routes.chains import chain_count, chain_seeds, refuse_unhonoured_options

__all__ = [
    "BLACKJAX_INITS",
    "BLACKJAX_OPTIONS",
    "BlackJAXRunner",
    "blackjax_installed",
    "check_blackjax_options",
    "nuts_chain",
    "sample_blackjax",
]

_log = logging.getLogger("pymc_dp")

BLACKJAX_INITS = ("auto", "adapt_diag", "jitter+adapt_diag", "adapt_full", "jitter+adapt_full")
"""``init`` values the BlackJAX sampler takes: a diagonal or dense mass matrix (window
adaptation), with or without PyMC's start jitter (uniform on [−1, 1] in the unconstrained
space); ``"auto"`` is ``"jitter+adapt_diag"``, as in PyMC."""

BLACKJAX_OPTIONS = frozenset(
    {
        "tune",
        "chains",
        "cores",
        "random_seed",
        "progressbar",
        "progressbar_theme",
        "quiet",
        "init",
        "initvals",
        "jitter_max_retries",
        "compute_convergence_checks",
        "var_names",
        "target_accept",
        "nuts",
        "nuts_sampler",
        "nuts_sampler_kwargs",
        "return_inferencedata",
        "discard_tuned_samples",
    }
)
"""``pm.sample`` options the BlackJAX sampler honours (``progressbar`` is accepted and shows
nothing; ``cores`` is accepted, chains run one after another). Any other option is refused
before the release."""

_NUTS_KEYS = {"target_accept": "target_acceptance_rate", "max_treedepth": "max_num_doublings"}


def blackjax_installed() -> bool:
    """True if ``jax`` and ``blackjax`` can be imported."""
    try:
        import blackjax  # noqa: F401
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def check_blackjax_options(kwargs: Mapping) -> None:
    """Refuse, before any release, what ``nuts_sampler="blackjax"`` cannot run.

    Raises
    ------
    ValueError
        Naming the option (an option outside :data:`BLACKJAX_OPTIONS`, an ``init`` outside
        :data:`BLACKJAX_INITS`, ``tune`` = 0, a NUTS option BlackJAX has no equivalent of,
        ``discard_tuned_samples=False``) or the missing packages. Nothing was released.
    """
    if not blackjax_installed():
        raise ValueError(
            "nuts_sampler='blackjax' needs the jax and blackjax packages: "
            'pip install -e ".[calibration]". Nothing was released.'
        )
    refuse_unhonoured_options("blackjax", kwargs, BLACKJAX_OPTIONS, BLACKJAX_INITS, _NUTS_KEYS)


class BlackJAXRunner:
    """A private model's log density and trace variables as JAX functions, and the chains
    compiled from them, kept for reuse.

    The released containers (:func:`~pymc_dp.analysis.rewrite.released_container_names`)
    become arguments of every function: a runner holds no release. Other shared values of
    the model (public constants) are compiled in; they are part of the structure key under
    which the runner is kept (:func:`pymc_dp.routes.compiled.structure_key`).

    Parameters
    ----------
    model : pm.Model
        A bounded family's private model (every free variable continuous).
    """

    def __init__(self, model: pm.Model):
        import jax
        from pymc.sampling.jax import get_jaxified_graph

        from pymc_dp.analysis.rewrite import released_container_names

        jax.config.update("jax_enable_x64", True)
        self.model = model
        self.containers = sorted(released_container_names(model))
        shared = [model[name] for name in self.containers]
        inputs = [pt.as_tensor_variable(v).type() for v in shared]
        self.value_vars = list(model.value_vars)
        outputs = list(get_default_varnames(model.unobserved_value_vars, False))
        self.names = [v.name for v in outputs]
        graphs = clone_replace(
            [model.logp(), *outputs], replace=dict(zip(shared, inputs, strict=True))
        )
        self._logp = get_jaxified_graph(inputs=self.value_vars + inputs, outputs=graphs[:1])
        self._point = get_jaxified_graph(inputs=self.value_vars + inputs, outputs=graphs[1:])
        self._start_logp = jax.jit(lambda position, data: self._logp(*position, *data)[0])
        self._chains: dict = {}
        self._initial_points: dict = {}

    def data(self) -> list[np.ndarray]:
        """The released values now in the model's containers, in argument order."""
        return [np.asarray(self.model[name].get_value()) for name in self.containers]

    def chain(self, tune: int, draws: int, full: bool, max_doublings: int):
        """The jitted chain: (key, data, position, target_accept) → (points, stats, step
        size). Compiled once per (tune, draws, mass matrix, tree depth)."""
        signature = (int(tune), int(draws), bool(full), int(max_doublings))
        if signature not in self._chains:
            self._chains[signature] = self._compile(*signature)
        return self._chains[signature]

    def _compile(self, tune: int, draws: int, full: bool, max_doublings: int):
        import jax

        logp, point = self._logp, self._point

        def one(key, data, position, target_accept):
            return nuts_chain(
                lambda x: logp(*x, *data)[0],
                lambda x: point(*x, *data),
                key,
                position,
                tune,
                draws,
                target_accept,
                full,
                max_doublings,
            )

        return jax.jit(one)

    def initial_points(self, initvals, jitter: bool, seeds: Sequence[int], retries: int):
        """One start per chain (unconstrained values, in ``value_vars`` order): PyMC's
        initial point, jittered as PyMC's ``init_nuts`` jitters it, drawn again (up to
        ``retries`` times) where the log density is not finite.

        Raises
        ------
        SamplingError
            If a chain has no finite start (as ``pm.sample``).
        """
        from pymc.initial_point import make_initial_point_fns_per_chain

        chains = len(seeds)
        key = (jitter, chains)
        functions = self._initial_points.get(key) if not initvals else None
        if functions is None:
            functions = make_initial_point_fns_per_chain(
                model=self.model,
                overrides=initvals,
                jitter_rvs=set(self.model.free_RVs) if jitter else set(),
                chains=chains,
            )
            if not initvals:
                self._initial_points[key] = functions
        data = self.data()
        starts = []
        for chain, (function, seed) in enumerate(zip(functions, seeds, strict=True)):
            rng = np.random.default_rng(seed)
            for _ in range(max(retries, 0) + 1):
                point = function(int(rng.integers(2**30)))
                position = [np.asarray(point[v.name], dtype=np.float64) for v in self.value_vars]
                if np.isfinite(float(self._start_logp(position, data))):
                    break
            else:
                raise SamplingError(
                    f"chain {chain}: no start with a finite log density in {retries + 1} "
                    "jittered tries of the private model (names of variables only: see "
                    "pymc_dp.sample's notes on starting values)"
                )
            starts.append(position)
        return starts


def nuts_chain(
    logdensity,
    point,
    key,
    position,
    tune: int,
    draws: int,
    target_accept,
    full: bool,
    max_doublings: int = 10,
):
    """One BlackJAX NUTS chain, traceable by ``jax.jit``: Stan's window adaptation for
    ``tune`` steps (diagonal or ``full`` mass matrix), then ``draws`` draws.

    Returns ``(point(position) per draw, stats per draw, step size)``, the stats in the order
    of ``_STAT_NAMES``. Shared by :class:`BlackJAXRunner` and the calibration study's JAX
    sampler (``pymc_dp.calibration.bounded``).
    """
    import blackjax
    import jax

    warm, run = jax.random.split(key)
    adaptation = blackjax.window_adaptation(
        blackjax.nuts,
        logdensity,
        is_mass_matrix_diagonal=not full,
        target_acceptance_rate=target_accept,
        max_num_doublings=max_doublings,
    )
    (state, parameters), _ = adaptation.run(warm, position, num_steps=tune)
    kernel = blackjax.nuts(logdensity, **parameters)  # with max_num_doublings

    def draw(state, key):
        state, info = kernel.step(key, state)
        stats = (
            info.is_divergent,
            info.energy,
            info.num_trajectory_expansions,
            info.num_integration_steps,
            info.acceptance_rate,
            state.logdensity,
        )
        return state, (point(state.position), stats)

    _, (points, stats) = jax.lax.scan(draw, state, jax.random.split(run, draws))
    return points, stats, parameters["step_size"]


_STAT_NAMES = ("diverging", "energy", "tree_depth", "n_steps", "acceptance_rate", "lp")



def sample_blackjax(runner: BlackJAXRunner, draws: int, kwargs: Mapping) -> xr.DataTree:
    """Sample ``runner``'s private model (its containers filled with the run's release).

    ``kwargs`` are :func:`pymc_dp.sample`'s options after the route's defaults (checked by
    :func:`check_blackjax_options`). Returns the un-stripped trace: the caller strips it
    like a ``pm.sample`` trace (:func:`pymc_dp.routes.laplace.private_trace`).
    """
    import blackjax
    import jax
    from arviz_base import from_dict, make_attrs
    from pymc.backends.arviz import coords_and_dims_for_inferencedata
    from pymc.stats.convergence import log_warnings, run_convergence_checks

    tune = 1000 if kwargs.get("tune") is None else int(kwargs["tune"])
    chains = chain_count(kwargs)
    init = str(kwargs.get("init", "auto")).lower()
    init = "jitter+adapt_diag" if init == "auto" else init
    nuts = dict(kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {})
    target_accept = float(kwargs.get("target_accept", nuts.get("target_accept", 0.8)))
    max_doublings = int(nuts.get("max_treedepth", 10))
    seeds = chain_seeds(kwargs.get("random_seed"), chains)
    initvals = kwargs.get("initvals")
    starts = runner.initial_points(
        initvals,
        init.startswith("jitter"),
        seeds,
        int(kwargs.get("jitter_max_retries", 10)),
    )
    function = runner.chain(tune, draws, init.endswith("full"), max_doublings)
    data = runner.data()
    started = time.perf_counter()
    points, stats, step_sizes = [], [], []
    for seed, start in zip(seeds, starts, strict=True):
        chain_points, chain_stats, step_size = function(
            jax.random.key(seed), data, start, target_accept
        )
        points.append([np.asarray(p) for p in chain_points])
        stats.append([np.asarray(s) for s in chain_stats])
        step_sizes.append(float(step_size))
    elapsed = time.perf_counter() - started
    if not kwargs.get("quiet", False):
        _log.info(
            "BlackJAX NUTS: %d chains for %d tune and %d draw iterations took %.1f seconds",
            chains,
            tune,
            draws,
            elapsed,
        )
    wanted = kwargs.get("var_names")
    posterior = {
        name: np.stack([chain[i] for chain in points])
        for i, name in enumerate(runner.names)
        if wanted is None or name in wanted
    }
    sample_stats = {
        name: np.stack([chain[i] for chain in stats]) for i, name in enumerate(_STAT_NAMES)
    }
    sample_stats["step_size"] = np.repeat(np.asarray(step_sizes)[:, None], draws, axis=1)
    sample_stats["reached_max_treedepth"] = sample_stats["tree_depth"] >= max_doublings
    coords, dims = coords_and_dims_for_inferencedata(runner.model)
    attrs = make_attrs({"sampling_time": elapsed, "tuning_steps": tune}, inference_library=blackjax)
    idata = from_dict(
        {"posterior": posterior, "sample_stats": sample_stats},
        coords=coords,
        dims={name: d for name, d in dims.items() if name in posterior},
        sample_dims=["chain", "draw"],
        attrs={"posterior": attrs, "sample_stats": attrs},
    )
    if kwargs.get("compute_convergence_checks", True):
        warnings = run_convergence_checks(idata, runner.model)
        if not kwargs.get("quiet", False):
            log_warnings(warnings)
    return idata
