"""nutpie's NUTS on a bounded family's private model, compiled once (``nuts_sampler="nutpie"``).

``pymc_dp.sample(..., nuts_sampler="nutpie")`` samples the private model of bounded
families' releases with nutpie (Seyboldt et al., pymc-devs): the model's log density and its
gradient compiled by numba from the PyTensor graph, NUTS and its adaptation in Rust, the
chains in threads. PyMC's NUTS spends about 0.1 ms of every leapfrog step in Python whatever
the model; nutpie spends none there, and its mass-matrix adaptation from the gradients
(``init="auto"``: diagonal; ``"jitter+adapt_full"``: diagonal plus low rank) often needs
fewer steps per draw (``benchmarks/cells_speed.py``, ``benchmarks/compile_once.py``,
``docs/calibration.md``).

Compiled once per model structure: the first call compiles (announced; about 10 s), and a
later call on a model of the same structure reuses the compiled functions with its own
release, which nutpie holds as data of the compiled model, never as constants in it
(:class:`NutpieRunner`, kept with the private model by
:func:`pymc_dp.routes.compiled.compiled_private_model`; its starting points, read from each
run's release by ``BoundedFamily.initial_values``, are set per call).

Post-processing of the release like every sampler of the private model: it reads the
released values, the public constants and the priors, no record. Same order as PyMC's route:
refuse → validate → budget → event → release → sample → strip; every option this sampler
cannot honour is refused before the release (:func:`check_nutpie_options`).

The trace has PyMC's layout: ``posterior`` (free variables and deterministics, the model's
coords and dims) and ``sample_stats`` with PyMC's names where PyMC's NUTS has the statistic
(``diverging``, ``energy``, ``n_steps``, ``step_size``, ``tree_depth``,
``reached_max_treedepth``, ``acceptance_rate``, ``lp``) and nutpie's own beside them.
nutpie computes ``energy`` in its own (adapted) coordinates: its level is not PyMC's, its
changes from draw to draw are (the energy diagnostics read those).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from pymc_dp.routes.chains import chain_count, chain_seeds, refuse_unhonoured_options

__all__ = [
    "NUTPIE_INITS",
    "NUTPIE_OPTIONS",
    "NutpieRunner",
    "check_nutpie_options",
    "nutpie_installed",
    "sample_nutpie",
]

_log = logging.getLogger("pymc_dp")

NUTPIE_INITS = ("auto", "jitter+adapt_diag", "jitter+adapt_full")
"""``init`` values the nutpie sampler takes: ``"auto"`` is ``"jitter+adapt_diag"``, nutpie's
diagonal mass matrix; ``"jitter+adapt_full"`` is its diagonal plus low-rank one (nutpie's
``adaptation="low_rank"``, its answer to a dense matrix), which the linear regression asks
for (``BoundedFamily.noise_aware_sampler``). Starts are always jittered as PyMC jitters them
(uniform on [−1, 1] in the unconstrained space): nutpie refuses a start where a gradient
component vanishes, as it does at the unjittered start of a varying-intercept model. The
low-rank matrix is not the default: on a varying-intercept logistic model (8 groups,
n = 4,000, ε = 1) it gave 2, 2 and 15 divergences per 1,000 draws on three seeds (82 with
1,000 tuning steps), the diagonal one none (``docs/calibration.md``)."""

NUTPIE_OPTIONS = frozenset(
    {
        "tune",
        "chains",
        "cores",
        "random_seed",
        "progressbar",
        "quiet",
        "init",
        "initvals",
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
"""``pm.sample`` options the nutpie sampler honours. Any other option is refused before the
release."""

_NUTS_KEYS = {"target_accept": "target_accept", "max_treedepth": "maxdepth"}

_STAT_NAMES = {
    "depth": "tree_depth",
    "maxdepth_reached": "reached_max_treedepth",
    "mean_tree_accept": "acceptance_rate",
    "logp": "lp",
}
"""nutpie's names of the statistics PyMC's NUTS also reports, and PyMC's names for them."""


def nutpie_installed() -> bool:
    """True if ``nutpie`` can be imported."""
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def check_nutpie_options(kwargs: Mapping) -> None:
    """Refuse, before any release, what ``nuts_sampler="nutpie"`` cannot run.

    Raises
    ------
    ValueError
        Naming the option (an option outside :data:`NUTPIE_OPTIONS`, an ``init`` outside
        :data:`NUTPIE_INITS`, ``tune`` = 0, a NUTS option nutpie has no equivalent of,
        ``discard_tuned_samples=False``, starts per chain) or the missing package. Nothing
        was released.
    """
    if not nutpie_installed():
        raise ValueError(
            "nuts_sampler='nutpie' needs the nutpie package: pip install nutpie. "
            "Nothing was released."
        )
    refuse_unhonoured_options("nutpie", kwargs, NUTPIE_OPTIONS, NUTPIE_INITS, _NUTS_KEYS)
    if kwargs.get("initvals") is not None and not isinstance(kwargs["initvals"], Mapping):
        raise ValueError(
            "nuts_sampler='nutpie' takes one dict of starts for every chain, not one per "
            "chain. Nothing was released."
        )


class NutpieRunner:
    """A private model compiled by nutpie (numba), kept for reuse.

    The released containers (:func:`~pymc_dp.analysis.rewrite.released_container_names`)
    are data of the compiled model, set on every call (nutpie's ``with_data``); between
    calls the runner holds NaN in their place, as the kept model does. Other shared values
    of the model (public constants) are part of the structure key under which the runner is
    kept (:func:`pymc_dp.routes.compiled.structure_key`).

    Parameters
    ----------
    model : pm.Model
        A bounded family's private model (every free variable continuous), its containers
        filled with a release.
    """

    def __init__(self, model: pm.Model):
        import nutpie

        from pymc_dp.analysis.rewrite import released_container_names

        self.model = model
        # Compiled from NaN in every released container: nutpie's numba functions keep the
        # shared values they were compiled with (in a closure), so a runner compiled while
        # the model held a release would keep that release for as long as it is cached.
        released = sorted(released_container_names(model))
        values = {name: model[name].get_value() for name in released}
        try:
            for name, value in values.items():
                model[name].set_value(np.full(np.shape(value), np.nan))
            compiled = nutpie.compile_pymc_model(model, backend="numba")
        finally:
            for name, value in values.items():
                model[name].set_value(value)
        # the released containers the compiled functions read (a plug-in model reads the
        # projected statistics, not the noisy ones); every call sets them (:meth:`for_run`)
        read = {var.name for var in compiled.shared_var_keys}
        self.containers = sorted(set(released) & read)
        self.compiled = compiled
        # nutpie's order of the free variables' unconstrained values in its flat vector
        self.names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
        self._lock = threading.Lock()

    def for_run(self, initvals: Mapping | None):
        """The compiled model with the release now in the model's containers and this
        run's starts (PyMC's initial point with ``initvals``, jittered as PyMC jitters it)."""
        from pymc.initial_point import make_initial_point_fn

        data = {name: np.asarray(self.model[name].get_value()) for name in self.containers}
        point = make_initial_point_fn(
            model=self.model,
            overrides=dict(initvals or {}),
            jitter_rvs=set(self.model.free_RVs),
            return_transformed=True,
        )
        names, lock = self.names, self._lock

        def flat(seed) -> np.ndarray:
            with lock:
                values = point(seed)
            return np.concatenate([np.asarray(values[n], dtype=np.float64).ravel() for n in names])

        return dataclasses.replace(self.compiled.with_data(**data), initial_point_func=flat)


def _adaptation(init: str) -> str:
    return "low_rank" if init.endswith("full") else "diag"


def sample_nutpie(runner: NutpieRunner, draws: int, kwargs: Mapping) -> xr.DataTree:
    """Sample ``runner``'s private model (its containers filled with the run's release).

    ``kwargs`` are :func:`pymc_dp.sample`'s options after the route's defaults (checked by
    :func:`check_nutpie_options`). Returns the un-stripped trace: the caller strips it like a
    ``pm.sample`` trace (:func:`pymc_dp.routes.laplace.private_trace`).
    """
    import nutpie
    from pymc.stats.convergence import log_warnings, run_convergence_checks

    tune = 1000 if kwargs.get("tune") is None else int(kwargs["tune"])
    chains = chain_count(kwargs)
    cores = kwargs.get("cores")
    init = str(kwargs.get("init", "auto")).lower()
    nuts = dict(kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {})
    options = {_NUTS_KEYS[key]: value for key, value in nuts.items()}
    options["target_accept"] = float(
        kwargs.get("target_accept", options.get("target_accept", 0.8))
    )
    compiled = runner.for_run(kwargs.get("initvals"))
    started = time.perf_counter()
    idata = nutpie.sample(
        compiled,
        draws=int(draws),
        tune=tune,
        chains=chains,
        cores=None if cores is None else int(cores),
        seed=chain_seeds(kwargs.get("random_seed"), 1)[0],
        save_warmup=False,
        progress_bar=bool(kwargs.get("progressbar", True)) and not kwargs.get("quiet", False),
        adaptation=_adaptation(init),
        **options,
    )
    elapsed = time.perf_counter() - started
    if not kwargs.get("quiet", False):
        _log.info(
            "nutpie NUTS: %d chains for %d tune and %d draw iterations took %.1f seconds",
            chains,
            tune,
            draws,
            elapsed,
        )
    idata = _pymc_layout(idata, kwargs.get("var_names"), elapsed, tune)
    if kwargs.get("compute_convergence_checks", True):
        warnings = run_convergence_checks(idata, runner.model)
        if not kwargs.get("quiet", False):
            log_warnings(warnings)
    return idata


def _pymc_layout(idata: xr.DataTree, var_names, elapsed: float, tune: int) -> xr.DataTree:
    """``posterior`` and ``sample_stats`` only, PyMC's names for the statistics PyMC reports."""
    posterior = idata["posterior"].to_dataset()
    if var_names is not None:
        posterior = posterior[[name for name in posterior.data_vars if name in var_names]]
    stats = idata["sample_stats"].to_dataset()
    stats = stats.rename({k: v for k, v in _STAT_NAMES.items() if k in stats.data_vars})
    stats = stats[[name for name in stats.data_vars if set(stats[name].dims) <= {"chain", "draw"}]]
    attrs = {"sampling_time": elapsed, "tuning_steps": tune, "inference_library": "nutpie"}
    posterior.attrs = {**posterior.attrs, **attrs}
    stats.attrs = dict(attrs)
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})

