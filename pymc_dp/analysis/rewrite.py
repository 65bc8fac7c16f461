"""Build the *private model*: the user's model with raw data replaced by released statistics.

Every observed likelihood handled by a release is removed and replaced by a potential
``<observed>_released`` equal to the conjugate log-likelihood of the projected noisy
statistics, Σ_g Σ_j Ŝ_gj log θ_gj (Foulds et al. 2016, §3.2: plug Ŝ into eq. 11). Data
containers that only the removed likelihoods used are dropped. The private model therefore
holds no raw record: NUTS steps for other variables, the ``lp`` sampler statistic,
``observed_data``, ``constant_data`` and ``log_likelihood`` can no longer read private data.
"""

from __future__ import annotations

from collections.abc import Iterable

import pymc as pm
from pymc.model.fgraph import (
    ModelNamed,
    ModelObservedRV,
    fgraph_from_model,
    model_from_fgraph,
    model_potential,
)
from pytensor.graph.traversal import ancestors

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families import FAMILIES
from pymc_dp.mechanisms.statistics import ReleasedStatistics

__all__ = ["RELEASED_TAG", "build_private_model", "data_free_model", "released_statistics_of"]

RELEASED_TAG = "pymc_dp_released"
"""Tag set on the Beta/Dirichlet variables of a private model; value: list of releases."""


def _family(release: ReleasedStatistics):
    return next(f for f in FAMILIES.values() if f.name == release.family)


def build_private_model(
    model: pm.Model, releases: Iterable[ReleasedStatistics], public: Iterable[str] = ()
) -> pm.Model:
    """A clone of ``model`` whose observed likelihoods are replaced by released statistics.

    ``public`` names ``pm.Data`` containers declared public, which may stay in the model.

    Raises
    ------
    NonPrivateModelError
        If an observed variable has no release, or a data container (``pm.Data``) is still
        needed by the remaining model (pymc_dp treats data containers as private).
    """
    releases = list(releases)
    by_observed = {r.observed: r for r in releases}
    missing = [rv.name for rv in model.observed_RVs if rv.name not in by_observed]
    if missing:
        raise NonPrivateModelError(f"observed variables without a private release: {missing}")
    fgraph, memo = fgraph_from_model(model)
    for release in releases:
        observed_var = memo[model[release.observed]]
        prior_var = memo[model[release.prior]]
        # Written per group on the prior itself (not on p[group]): no group label survives.
        loglik = _family(release).log_likelihood(prior_var, release.table)
        fgraph.remove_output(fgraph.outputs.index(observed_var))
        fgraph.add_output(model_potential(loglik, f"{release.observed}_released"))
    _refuse_remaining_data(fgraph, frozenset(public))
    private = model_from_fgraph(fgraph, mutate_fgraph=True)
    _refuse_surviving_observations(private)
    for prior_name in {r.prior for r in releases}:
        private[prior_name].tag.__dict__[RELEASED_TAG] = [
            r for r in releases if r.prior == prior_name
        ]
    return private


def data_free_model(model: pm.Model, public: Iterable[str] = ()) -> pm.Model:
    """A clone of ``model`` without its observed variables (and data only they used).

    ``public`` names ``pm.Data`` containers declared public, which may stay in the model.

    Posterior-sampling mechanisms run PyMC's own samplers on this model for the free variables
    that read no data (e.g. hyperpriors): no sampler, ``lp`` statistic or trace group can then
    read a private record. Free variables and potentials are kept.

    Raises
    ------
    NonPrivateModelError
        If a data container (``pm.Data``) is still needed without the observed variables.
    """
    fgraph, memo = fgraph_from_model(model)
    for rv in model.observed_RVs:
        fgraph.remove_output(fgraph.outputs.index(memo[rv]))
    _refuse_remaining_data(fgraph, frozenset(public))
    free = model_from_fgraph(fgraph, mutate_fgraph=True)
    _refuse_surviving_observations(free)
    return free


def _refuse_surviving_observations(model: pm.Model) -> None:
    """An observed variable survives removal when something else still reads it."""
    if model.observed_RVs:
        raise NonPrivateModelError(
            f"{[rv.name for rv in model.observed_RVs]} are still read by other model variables "
            "(a Deterministic or Potential of observed data): remove those variables"
        )


def _refuse_remaining_data(fgraph, public: frozenset[str]) -> None:
    """Drop data containers nothing uses any more; refuse if a private one is still used.

    Defence in depth: :func:`pymc_dp.analysis.recognise` refuses such models before any
    release, so this should never raise on a route.
    """
    _drop_unused_data(fgraph)
    still_needed = [
        out.owner.op.name
        for out in fgraph.outputs
        if out.owner is not None
        and isinstance(out.owner.op, ModelNamed)
        and out.owner.op.name not in public
    ]
    if still_needed:
        raise NonPrivateModelError(
            f"data containers {still_needed} are used outside the private likelihoods and are "
            "not declared public. Declare public containers with public=[...]."
        )


def _drop_unused_data(fgraph) -> None:
    """Remove data-container outputs that no remaining model variable depends on."""
    named = [
        out
        for out in fgraph.outputs
        if out.owner is not None and isinstance(out.owner.op, ModelNamed | ModelObservedRV)
    ]
    others = [out for out in fgraph.outputs if out not in named]
    used = set(ancestors(others))
    for out in named:
        if isinstance(out.owner.op, ModelNamed) and out.owner.inputs[0] not in used:
            fgraph.remove_output(fgraph.outputs.index(out))


def released_statistics_of(rv) -> list[ReleasedStatistics]:
    """The releases attached to a variable of a private model ([] if none)."""
    return list(getattr(rv.tag, RELEASED_TAG, []))
