"""Route: noisy sufficient statistics (Laplace or Gaussian), then private conjugate Gibbs.

Foulds et al. 2016, §3.2 eq. (16)–(17) (release) and §4.2 (sampling). The order of every
route: analyse and refuse (:func:`pymc_dp.analysis.recognise`, done by the caller) →
validate records (also in the recogniser) → check the budget for all releases together →
record each event → release (:func:`pymc_dp.mechanisms.statistics.release_all`) → build the
private model, in which every likelihood is replaced by its released statistics
(:func:`pymc_dp.analysis.rewrite.build_private_model`) → ``pm.sample`` with
:class:`~pymc_dp.PrivateConjugateGibbs` for the released priors and PyMC's samplers for
variables that read no private array (one trace point function for all chains,
:func:`pymc_dp.traces.shared_function_trace`) → strip every group that could read raw data
and attach the released statistics. Every draw is post-processing: chains, tuning and progress
output are free.

Bounded families (Poisson, Normal with unknown mean and sd, linear regression, with declared
``data_bounds``; :mod:`pymc_dp.families.bounded`) are released by the same ``release_all``
(one Laplace event each) and become potentials of the private model, plug-in or noise-aware
(``request.inference``); PyMC's NUTS samples their parameters, next to the conjugate step.

Noise (``pymc_dp.sample(noise=...)``, ``RunRequest.noise``): ``"laplace"``
(default; (ε, 0)-DP, L1 sensitivity) or ``"gaussian"`` (:mod:`pymc_dp.mechanisms.gaussian`:
ρ-zCDP, (ε, δ)-DP with the run's δ split equally across the releases, L2 sensitivity). Both
readings of the release (noise-aware, plug-in) support both noises for every family: with
Gaussian noise the release given the true statistics is exactly Normal(T, σ²I), σ known.
"""

from __future__ import annotations

from collections.abc import Sequence

import pymc as pm
import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.analysis.rewrite import build_private_model, use_release
from pymc_dp.compiling import announce
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.latent_counts import announce_kernels
from pymc_dp.inference import check_inference
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.mechanisms.gaussian import validate_noise
from pymc_dp.mechanisms.statistics import (
    BoundedRelease,
    ReleasedStatistics,
    release_all,
    require_current_release,
)
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.blackjax_nuts import BlackJAXRunner, sample_blackjax
from pymc_dp.routes.compiled import compiled_private_model
from pymc_dp.routes.nutpie_nuts import NutpieRunner, sample_nutpie
from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.noise_aware_gibbs import NoiseAwareConjugateGibbs
from pymc_dp.traces import RELEASED_GROUP, keep_groups, shared_function_trace

__all__ = [
    "private_trace",
    "released_statistics_dataset",
    "run_laplace",
    "sample_released",
]


def request_noise(request: RunRequest) -> str:
    """The noise of ``request``, checked."""
    return validate_noise(request.noise)


def run_laplace(request: RunRequest, recognised: Recognised) -> xr.DataTree:
    """Release every link not already released by ``request.step``, then sample.

    Raises
    ------
    ValueError
        If epsilon is missing for links to release, or given when there is nothing to release.
    BudgetExceededError
        If the releases would exceed the budget (nothing is released).
    StaleReleaseError
        If a step's release was made from other records than the model holds now
        (``pm.set_data`` after the step was built; nothing is charged or sampled).
    """
    if request.release is not None:
        raise ValueError("the Laplace path releases statistics once; every draw is free")
    noise = request_noise(request)
    inference = check_inference(request.inference)
    provided = _as_private_steps(request.step)
    for release in (r for s in provided for r in s.releases):  # before anything is charged
        require_current_release(release, recognised.blocks.get(release.observed))
    done = {r.observed for s in provided for r in s.releases}
    links = [link for name, link in recognised.blocks.items() if name not in done]
    if links and request.epsilon is None:
        raise ValueError(f"epsilon is required to release {[link.observed for link in links]}")
    if not links and request.epsilon is not None:
        raise ValueError("every observed variable was already released by `step`; drop epsilon")
    releases = _adopt_step_releases(provided, request.ledger)
    if links:
        releases += release_all(
            links,
            request.epsilon,
            ledger=request.ledger,
            neighbouring=request.neighbouring,
            backend=request.noise_backend,
            rng=request.noise_rng,
            noise=noise,
            delta=request.delta if noise == "gaussian" else 0.0,
        )
    return sample_released(request, releases, inference)


def sample_released(
    request: RunRequest,
    releases: Sequence[ReleasedStatistics | BoundedRelease],
    inference: str = "plugin",
) -> xr.DataTree:
    """Sample the private model built on ``releases`` and strip the trace (post-processing).

    Every likelihood of ``request.model`` is replaced by its release
    (:func:`~pymc_dp.analysis.rewrite.build_private_model`); the released conjugate priors are
    sampled by :class:`~pymc_dp.PrivateConjugateGibbs` (or its noise-aware version) and
    every other free variable by PyMC. Shared by the statistics route and the Dirichlet
    releases (:mod:`pymc_dp.routes.dirichlet`), whose release is a Dirichlet posterior.

    When every release is a bounded family's, the private model is compiled once per
    structure (:func:`pymc_dp.routes.compiled.compiled_private_model`): a later call on a model of
    the same structure samples the kept model filled with its own releases.
    """
    private = build_private_model(
        request.model,
        releases,
        public=request.public,
        inference=inference,
    )
    if releases and all(isinstance(r, BoundedRelease) for r in releases):
        # Compile once: a private model of bounded releases reads them from data containers.
        sampler = request.sample_kwargs.get("nuts_sampler")
        backend = {"blackjax": "JAX", "nutpie": "numba, by nutpie"}.get(sampler, "PyTensor")
        what = _compiling_what(releases, inference, backend)
        with compiled_private_model(private, None) as kept:
            for release in releases:
                use_release(kept.model, release)
            kwargs = _sample_kwargs(request, releases, inference, kept.model, kept)
            with kept.model, route_context():
                # announced when the sampler's own functions are not compiled yet (a kept
                # model sampled by one sampler is a first compile for the other)
                if sampler == "nutpie":
                    if kept.nutpie_runner is None:
                        announce(what, True)
                        kept.nutpie_runner = NutpieRunner(kept.model)
                    idata = sample_nutpie(kept.nutpie_runner, request.draws, kwargs)
                elif sampler == "blackjax":
                    if kept.blackjax_runner is None:
                        announce(what, True)
                        kept.blackjax_runner = BlackJAXRunner(kept.model)
                    idata = sample_blackjax(kept.blackjax_runner, request.draws, kwargs)
                else:
                    announce(what, not kept.functions)
                    idata = pm.sample(request.draws, step=[], model=kept.model, **kwargs)
    else:
        # Released Beta/Dirichlet statistics are constants of the potential: built per call.
        released_priors = sorted({r.prior for r in releases if isinstance(r, ReleasedStatistics)})
        with private, route_context():
            # The releases decide, also those adopted from pre-built PrivateConjugateGibbs steps.
            conjugate_step = (
                NoiseAwareConjugateGibbs if inference == "noise-aware" else PrivateConjugateGibbs
            )
            if inference == "noise-aware" and released_priors:
                announce_kernels()  # the latent counts' numba kernels: first run on a machine only
            steps = (
                [conjugate_step([private[name] for name in released_priors])]
                if released_priors
                else []
            )
            kwargs = _sample_kwargs(request, releases, inference, private)
            idata = pm.sample(request.draws, step=steps, model=private, **kwargs)
    trace = private_trace(idata, releases, request.model)
    trace[RELEASED_GROUP].attrs["inference"] = inference
    return trace


def _sample_kwargs(request: RunRequest, releases, inference: str, private, kept=None) -> dict:
    """``pm.sample``'s options: the caller's, the noise-aware defaults, a shared trace (its
    point function reused from ``kept``, :class:`~pymc_dp.routes.compiled.CompiledModel`)."""
    kwargs = dict(request.sample_kwargs)
    if inference == "noise-aware":
        _noise_aware_sampler_defaults(kwargs, releases)
    if kwargs.get("nuts_sampler") in ("blackjax", "nutpie"):
        return kwargs  # its own trace (pymc_dp.routes.blackjax_nuts, .nutpie_nuts)
    if kwargs.get("trace") is None and kwargs.get("var_names") is None:
        point_function = None if kept is None else kept.point_function
        template = shared_function_trace(private, point_function=point_function)
        if kept is not None and template is not None:
            kept.point_function = template.fn
        kwargs["trace"] = template  # None: PyMC's default backend
    return kwargs


def _compiling_what(
    releases: Sequence[BoundedRelease], inference: str, backend: str = "PyTensor"
) -> str:
    """The announcement's words: which private model compiles (names, never values)."""
    names = ", ".join(r.observed for r in releases)
    return f"the {inference} private model of {names} ({backend})"


def _noise_aware_sampler_defaults(kwargs: dict, releases) -> None:
    """NUTS options the bounded families' noise-aware models sample well with
    (``BoundedFamily.noise_aware_sampler``: the largest ``target_accept``, a dense mass matrix
    if any asks for it) and the starts of their latent variables
    (``BoundedFamily.initial_values``), unless the caller chose them."""
    wanted: dict = {}
    for release in releases:
        if isinstance(release, BoundedRelease):
            for key, value in release.structure.family.noise_aware_sampler.items():
                if key == "target_accept":
                    value = max(wanted.get(key, value), value)
                wanted[key] = value
    starts = {}
    for release in releases:
        if isinstance(release, BoundedRelease):
            starts.update(release.structure.family.initial_values(release))
    given = kwargs.get("initvals")
    if starts and (given is None or isinstance(given, dict)):
        kwargs["initvals"] = {**starts, **(given or {})}  # the caller's starts win
    nuts = kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {}
    if "target_accept" in wanted and "target_accept" not in {**kwargs, **nuts}:
        kwargs["target_accept"] = wanted["target_accept"]
    if "init" in wanted and "init" not in kwargs and kwargs.get("nuts_sampler") != "blackjax":
        # a dense mass matrix is PyMC's regularised, continuously adapted one; BlackJAX's
        # windowed dense estimate lost the regression's chain (docs/calibration.md)
        kwargs["init"] = wanted["init"]


def private_trace(
    idata: xr.DataTree,
    releases: Sequence[ReleasedStatistics | BoundedRelease],
    model: pm.Model | None = None,
    ledger: PrivacyLedger | None = None,
) -> xr.DataTree:
    """Strip every group that could read raw data, then attach the releases (and a ledger).

    Keeps only :data:`~pymc_dp.traces.SAFE_GROUPS`; adds group ``released_statistics``
    (noisy statistics as released, and their projection) and, when given, the ledger.

    Examples
    --------
    What :func:`pymc_dp.sample` does on the Laplace route, step by step: release, build the
    private model, sample it with PyMC (post-processing), keep only what a trace may hold:

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=1_000)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> released = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=ledger)
    >>> with pymc_dp.build_private_model(model, [released]):
    ...     idata = pm.sample(100, tune=100, chains=1, random_seed=1, progressbar=False,
    ...                       step=pymc_dp.PrivateConjugateGibbs())
    >>> idata = pymc_dp.private_trace(idata, [released], ledger=ledger)
    >>> sorted(idata.children)
    ['posterior', 'privacy_ledger', 'released_statistics', 'sample_stats']
    """
    keep_groups(idata)
    idata[RELEASED_GROUP] = released_statistics_dataset(releases, model)
    return ledger.attach(idata) if ledger is not None else idata


def released_statistics_dataset(
    releases: Sequence[ReleasedStatistics | BoundedRelease], model: pm.Model | None = None
) -> xr.Dataset:
    """The releases as labelled arrays: ``<observed>`` (noisy, as released) and
    ``<observed>_projected`` (what the sampler used), dims ``(<observed>_group, ...)``.

    A bounded family's components are labelled (``<observed>_statistic`` coordinates such as
    "n", "sum(u)", "sum(u*u)"); they are on the unit scale of the declared bounds (centred on
    the midpoints for the Normal and regression), which the variables' attributes state
    (``data_bounds``). The released values are the family's public weights times the
    statistics, plus noise (``weights``, one per released component: the ε split of
    :mod:`pymc_dp.families.second_moments`; all ones for Poisson), so the noise on statistic j
    is ``noise_scale / weights[j]``; ``<observed>_projected`` is un-weighted. Every variable's
    attributes give the release's ``noise`` ("laplace" or "gaussian") and ``noise_scale``
    (Laplace b or Gaussian σ; Laplace releases also keep ``laplace_scale``)."""
    data_vars, coords = {}, {}
    for r in releases:
        group_dim = f"{r.observed}_group"
        labels = _group_labels(model, r)
        if labels is not None:
            coords[group_dim] = labels
        noise = getattr(r, "noise", "laplace")
        attrs = {"noise": noise, "noise_scale": float(r.scale)}
        if isinstance(r, BoundedRelease):
            names = r.component_names
            coords[f"{r.observed}_statistic"] = names
            coords[f"{r.observed}_released_component"] = [names[i] for i in r.released_index]
            attrs["data_bounds"] = r.structure.describe_bounds()
            family = r.structure.family
            weights = family.weights(r.structure, r.neighbouring)[r.released_index]
            attrs["weights"] = [float(w) for w in weights]
            if noise == "laplace":
                attrs["laplace_scale"] = r.scale
        data_vars[r.observed] = ((group_dim, f"{r.observed}_released_component"), r.noisy, attrs)
        data_vars[f"{r.observed}_projected"] = (
            (group_dim, f"{r.observed}_statistic"),
            r.table,
            {key: value for key, value in attrs.items() if key != "weights"},  # un-weighted
        )
    return xr.Dataset(data_vars, coords=coords)


def _group_labels(model: pm.Model | None, release: ReleasedStatistics | BoundedRelease):
    if model is None:
        return None
    group_variable = (
        release.group_variable if isinstance(release, BoundedRelease) else release.prior
    )
    dims = model.named_vars_to_dims.get(group_variable) or ()
    if release.table.shape[0] == 1 or not dims or dims[0] not in model.coords:
        return None
    labels = model.coords[dims[0]]
    return list(labels) if labels is not None and len(labels) == release.table.shape[0] else None


def _as_private_steps(step) -> list[PrivateConjugateGibbs]:
    if step is None:
        return []
    steps = [step] if not isinstance(step, Sequence) else list(step)
    for s in steps:
        if not isinstance(s, PrivateConjugateGibbs):
            raise TypeError(
                "pymc_dp.sample assigns samplers itself; `step` may only hold "
                "PrivateConjugateGibbs instances. Configure PyMC samplers for the non-private "
                f"variables with keyword dicts such as nuts={{...}} (got {type(s).__name__})"
            )
    observed = [r.observed for s in steps for r in s.releases]
    if len(observed) != len(set(observed)):
        raise NonPrivateModelError(f"an observed variable was released twice: {observed}")
    return steps


def _adopt_step_releases(
    steps: list[PrivateConjugateGibbs], ledger: PrivacyLedger
) -> list[ReleasedStatistics]:
    releases = []
    for s in steps:
        for event in s.events:
            if not any(event is e for e in ledger.events):
                ledger.charge(event)
        releases += s.releases
    return releases
