"""Route: Laplace-privatised sufficient statistics, then private conjugate Gibbs.

Foulds et al. 2016, §3.2 eq. (16)–(17) (release) and §4.2 (sampling). The order of every
route: analyse and refuse (:func:`pymc_dp.analysis.recognise`, done by the caller) →
validate records (also in the recogniser) → check the budget for all releases together →
record each event → release (:func:`pymc_dp.mechanisms.statistics.release_all`) → build the
private model, in which every likelihood is replaced by its released statistics
(:func:`pymc_dp.analysis.rewrite.build_private_model`) → ``pm.sample`` with
:class:`~pymc_dp.steps.PrivateConjugateGibbs` for the released priors and PyMC's samplers for
variables that read no private array (one trace point function for all chains,
:func:`pymc_dp.traces.shared_function_trace`) → strip every group that could read raw data
and attach the released statistics. Every draw is post-processing: chains, tuning and progress
output are free.
"""

from __future__ import annotations

from collections.abc import Sequence

import pymc as pm
import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.analysis.rewrite import build_private_model
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.mechanisms.statistics import ReleasedStatistics, release_all
from pymc_dp.routes.base import RunRequest
from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.guard import route_context
from pymc_dp.traces import RELEASED_GROUP, keep_groups, shared_function_trace

__all__ = [
    "DEFAULT_INFERENCE",
    "INFERENCES",
    "private_trace",
    "released_statistics_dataset",
    "run_laplace",
]

INFERENCES: tuple[str, ...] = ("noise-aware", "plugin")
"""How the released statistics are read (``pymc_dp.sample(inference=...)``)."""
DEFAULT_INFERENCE = "plugin"
"""The Laplace route's inference when ``inference`` is not given."""


def run_laplace(request: RunRequest, recognised: Recognised) -> xr.DataTree:
    """Release every link not already released by ``request.step``, then sample.

    Raises
    ------
    ValueError
        If epsilon is missing for links to release, or given when there is nothing to release.
    BudgetExceededError
        If the releases would exceed the budget (nothing is released).
    """
    if request.release is not None:
        raise ValueError("the Laplace path releases statistics once; every draw is free")
    provided = _as_private_steps(request.step)
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
        )
    private = build_private_model(request.model, releases, public=request.public)
    released_priors = sorted({r.prior for r in releases})
    with private, route_context():
        steps = [PrivateConjugateGibbs([private[name] for name in released_priors])]
        kwargs = dict(request.sample_kwargs)
        if kwargs.get("trace") is None and kwargs.get("var_names") is None:
            kwargs["trace"] = shared_function_trace(private)  # None: PyMC's default backend
        idata = pm.sample(request.draws, step=steps, model=private, **kwargs)
    return private_trace(idata, releases, request.model)


def private_trace(
    idata: xr.DataTree,
    releases: Sequence[ReleasedStatistics],
    model: pm.Model | None = None,
    ledger: PrivacyLedger | None = None,
) -> xr.DataTree:
    """Strip every group that could read raw data, then attach the releases (and a ledger).

    Keeps only :data:`~pymc_dp.traces.SAFE_GROUPS`; adds group ``released_statistics``
    (noisy statistics as released, and their projection) and, when given, the ledger.
    """
    keep_groups(idata)
    idata[RELEASED_GROUP] = released_statistics_dataset(releases, model)
    return ledger.attach(idata) if ledger is not None else idata


def released_statistics_dataset(
    releases: Sequence[ReleasedStatistics], model: pm.Model | None = None
) -> xr.Dataset:
    """The releases as labelled arrays: ``<observed>`` (noisy, as released) and
    ``<observed>_projected`` (what the sampler used), dims ``(<observed>_group, ...)``."""
    data_vars, coords = {}, {}
    for r in releases:
        group_dim = f"{r.observed}_group"
        labels = _group_labels(model, r)
        if labels is not None:
            coords[group_dim] = labels
        data_vars[r.observed] = ((group_dim, f"{r.observed}_released_component"), r.noisy)
        data_vars[f"{r.observed}_projected"] = ((group_dim, f"{r.observed}_statistic"), r.table)
    return xr.Dataset(data_vars, coords=coords)


def _group_labels(model: pm.Model | None, release: ReleasedStatistics):
    if model is None:
        return None
    dims = model.named_vars_to_dims.get(release.prior) or ()
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
