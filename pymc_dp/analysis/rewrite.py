"""Build the *private model*: the user's model with raw data replaced by released statistics.

Every observed likelihood handled by a release is removed and replaced by a potential
``<observed>_released`` equal to the conjugate log-likelihood of the projected noisy
statistics, Σ_g Σ_j Ŝ_gj log θ_gj (Foulds et al. 2016, §3.2: plug Ŝ into eq. 11). Data
containers that only the removed likelihoods used are dropped. The private model therefore
holds no raw record: NUTS steps for other variables, the ``lp`` sampler statistic,
``observed_data``, ``constant_data`` and ``log_likelihood`` can no longer read private data.

A bounded family's release (Poisson, Normal, linear regression;
:class:`~pymc_dp.mechanisms.statistics.BoundedRelease`) becomes a potential
``<observed>_released`` that the family writes (:mod:`pymc_dp.families.bounded`), read from
data containers holding only released values, so that the model can be re-run on another
release without being rebuilt (:func:`set_released_statistics`):

* ``<observed>_released_statistics`` (G, r): the noisy components as released (unit scale);
* ``inference="plugin"``: ``<observed>_projected_statistics`` (G, D), the projection, read
  by the plug-in likelihood (e.g. Normal: −n log σ − (Σx² − 2μΣx + nμ²)/(2σ²));
* ``inference="noise-aware"``: ``<observed>_noise_scale`` (the Laplace scale b, or the
  Gaussian σ) and, when n is public, ``<observed>_public_n`` (G,); the family adds its latent
  variables (a regression's ``<observed>_noise_variance`` for Laplace noise only — Gaussian
  noise has a known variance σ², and the Normal's two components integrate V out —,
  ``<observed>_n_records`` when n is private, a regression's
  ``<observed>_covariate_*``), all post-processing of the release.

The parameters the potential reads are the user's parameter graphs (μ, σ, λ, β, α), moved
into the private model by replacing each named model variable with its private copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np
import pymc as pm
from pymc.model.fgraph import (
    ModelNamed,
    ModelObservedRV,
    fgraph_from_model,
    model_from_fgraph,
    model_potential,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families import FAMILIES
from pymc_dp.inference import check_inference
from pymc_dp.mechanisms.statistics import BoundedRelease, ReleasedStatistics, project_bounded

__all__ = [
    "RELEASED_TAG",
    "add_released_likelihood",
    "build_private_model",
    "data_free_model",
    "forget_released_statistics",
    "released_container_names",
    "released_statistics_of",
    "set_released_statistics",
    "use_release",
]

"""How a bounded family's release is read (see the module docstring)."""
_BOUNDED_TAG = "pymc_dp_bounded_release"

RELEASED_TAG = "pymc_dp_released"
"""Tag set on the Beta/Dirichlet variables of a private model; value: list of releases."""


def _family(release: ReleasedStatistics):
    return next(f for f in FAMILIES.values() if f.name == release.family)


def build_private_model(
    model: pm.Model,
    releases: Iterable[ReleasedStatistics | BoundedRelease],
    public: Iterable[str] = (),
    *,
    inference: str = "plugin",
) -> pm.Model:
    """A clone of ``model`` whose observed likelihoods are replaced by released statistics.

    ``public`` names ``pm.Data`` containers declared public, which may stay in the model.
    ``inference`` says how bounded families' releases are read
    (:data:`pymc_dp.inference.INFERENCES`);
    conjugate releases are always written as their plug-in potential (their noise-aware
    reading is a step's job).

    Raises
    ------
    NonPrivateModelError
        If an observed variable has no release, or a data container (``pm.Data``) is still
        needed by the remaining model (pymc_dp treats data containers as private).
    ValueError
        For an unknown ``inference``.

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
    >>> released = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=pymc_dp.PrivacyLedger())
    >>> private_model = pymc_dp.build_private_model(model, [released])
    >>> [v.name for v in private_model.free_RVs], private_model.observed_RVs  # no raw records
    (['p'], [])
    """
    check_inference(inference)
    releases = list(releases)
    by_observed = {r.observed: r for r in releases}
    missing = [rv.name for rv in model.observed_RVs if rv.name not in by_observed]
    if missing:
        raise NonPrivateModelError(f"observed variables without a private release: {missing}")
    conjugate = [r for r in releases if not isinstance(r, BoundedRelease)]
    bounded = [r for r in releases if isinstance(r, BoundedRelease)]
    fgraph, memo = fgraph_from_model(model)
    for release in conjugate:
        observed_var = memo[model[release.observed]]
        prior_var = memo[model[release.prior]]
        # Written per group on the prior itself (not on p[group]): no group label survives.
        loglik = _family(release).log_likelihood(prior_var, release.table)
        fgraph.remove_output(fgraph.outputs.index(observed_var))
        fgraph.add_output(model_potential(loglik, f"{release.observed}_released"))
    for release in bounded:  # its potential is added below, on the private model's variables
        fgraph.remove_output(fgraph.outputs.index(memo[model[release.observed]]))
    _refuse_remaining_data(fgraph, frozenset(public))
    private = model_from_fgraph(fgraph, mutate_fgraph=True)
    _refuse_surviving_observations(private)
    for prior_name in {r.prior for r in conjugate}:
        private[prior_name].tag.__dict__[RELEASED_TAG] = [
            r for r in conjugate if r.prior == prior_name
        ]
    _keep_public_parameter_data(private, model, bounded, frozenset(public))
    for release in bounded:
        add_released_likelihood(private, model, release, inference)
    return private


def _keep_public_parameter_data(
    private: pm.Model, source: pm.Model, bounded: list, public: frozenset[str]
) -> None:
    """Add to ``private`` every declared-public ``pm.Data`` container a bounded family's
    parameter graphs read that the clone dropped (it was read by the observed likelihood
    only, e.g. ``mu * s`` or a group-level design ``(Xg @ b)[g]``), with its value and dims.
    A container that is not declared public is never added (the classifier refused it before
    any release)."""
    read = {
        leaf
        for release in bounded
        for leaf in ancestors(list(release.structure.parameters.values()))
        if isinstance(leaf, SharedVariable) and leaf in source.data_vars
    }
    with private:
        for container in sorted(read, key=lambda v: v.name):
            if container.name in private.named_vars or container.name not in public:
                continue
            pm.Data(
                container.name,
                container.get_value(),
                dims=source.named_vars_to_dims.get(container.name),
            )


def add_released_likelihood(
    private: pm.Model, source: pm.Model, release: BoundedRelease, inference: str = "plugin"
) -> Variable:
    """Add a bounded family's release to ``private`` as the potential ``<observed>_released``.

    The family writes the potential
    (:meth:`~pymc_dp.families.bounded.BoundedFamily.plugin_log_likelihood` or
    :meth:`~pymc_dp.families.bounded.BoundedFamily.noise_aware_log_likelihood`) on the
    parameter graphs of ``source`` moved into ``private``; the released values live in data
    containers (module docstring).

    Raises
    ------
    NonPrivateModelError
        If a parameter graph reads a variable the private model does not have.
    """
    check_inference(inference)
    name, structure = release.observed, release.structure
    family = structure.family
    parameters = _moved_parameters(private, source, structure.parameters, name)
    with private:
        released = pm.Data(f"{name}_released_statistics", np.asarray(release.noisy, float))
        if inference == "plugin":
            table = pm.Data(f"{name}_projected_statistics", np.asarray(release.table, float))
            loglik = family.plugin_log_likelihood(parameters, table, structure)
        else:
            scale = pm.Data(f"{name}_noise_scale", np.asarray(release.scale, float))
            public_n = None
            if release.public_n is not None:
                public_n = pm.Data(f"{name}_public_n", np.asarray(release.public_n, float))
            loglik = family.noise_aware_log_likelihood(
                parameters,
                released,
                scale,
                public_n,
                structure,
                release.neighbouring,
                noise=release.noise,
            )
        potential = pm.Potential(f"{name}_released", loglik)
    released.tag.__dict__[_BOUNDED_TAG] = release
    return potential


def set_released_statistics(
    private: pm.Model,
    observed: str,
    noisy: np.ndarray,
    *,
    scale: float | None = None,
    public_n: np.ndarray | None = None,
) -> None:
    """Put another release of ``observed`` into a private model built once (no rebuild).

    For evaluations over many simulated releases: build the private model once
    (:func:`build_private_model`), compile a sampler once (e.g. ``step = pm.NUTS(model=
    private)``), then for every release call this and ``pm.sample(step=step, model=private)``.
    The projection is recomputed (post-processing). Nothing is charged: the values are
    assumed to be releases already accounted for.

    Parameters
    ----------
    private : pm.Model
        A private model with a bounded release of ``observed``.
    observed : str
    noisy : ndarray, shape (G, r)
        The released components, on the unit scale (as ``BoundedRelease.noisy``).
    scale : float, optional
        The noise scale of the new release, Laplace b or Gaussian σ (default: unchanged; the
        noise distribution is the built release's).
    public_n : ndarray, shape (G,), optional
        The public record counts of the new release (default: unchanged).

    Raises
    ------
    KeyError
        If ``private`` holds no bounded release of ``observed``.
    """
    container = private[f"{observed}_released_statistics"]
    release: BoundedRelease = container.tag.__dict__[_BOUNDED_TAG]
    noisy = np.asarray(noisy, dtype=np.float64).reshape(release.noisy.shape)
    scale = release.scale if scale is None else float(scale)
    if public_n is None:
        public_n = release.public_n
    values = {container.name: noisy}
    names = set(private.named_vars)
    if f"{observed}_projected_statistics" in names:
        values[f"{observed}_projected_statistics"] = project_bounded(
            release.structure, noisy, scale, release.neighbouring, public_n
        )
    if f"{observed}_noise_scale" in names:
        values[f"{observed}_noise_scale"] = np.asarray(scale, dtype=np.float64)
    if f"{observed}_public_n" in names and public_n is not None:
        values[f"{observed}_public_n"] = np.asarray(public_n, dtype=np.float64).reshape(-1)
    pm.set_data(values, model=private)


def use_release(private: pm.Model, release: BoundedRelease) -> None:
    """Make ``release`` the bounded release ``private`` reads: its containers and its tag.

    For a private model built once and sampled on every new release of the same structure
    (:func:`pymc_dp.routes.compiled.compiled_private_model`): every value the model reads —
    released components, projection, noise scale, public n — is ``release``'s, nothing of
    the release it held before.
    """
    container = private[f"{release.observed}_released_statistics"]
    container.tag.__dict__[_BOUNDED_TAG] = release
    set_released_statistics(
        private,
        release.observed,
        release.noisy,
        scale=release.scale,
        public_n=release.public_n,
    )


def released_container_names(private: pm.Model) -> set[str]:
    """Names of the data containers that hold a bounded release in ``private`` (released
    components, projection, noise scale, public n): what :func:`use_release` writes and
    :func:`forget_released_statistics` overwrites."""
    names = set(private.named_vars)
    held = set()
    for container in list(private.data_vars):
        release = container.tag.__dict__.get(_BOUNDED_TAG)
        if release is None:
            continue
        held |= {f"{release.observed}{s}" for s in _RELEASED_CONTAINERS} & names
    return held


def forget_released_statistics(private: pm.Model) -> None:
    """Overwrite every released value a private model holds with NaN, in place.

    Its data containers (released components, projection, noise scale, public n) and the
    releases tagged on them keep their shapes and structure but no value: a model kept for
    reuse (:func:`pymc_dp.routes.compiled.compiled_private_model`) holds nothing of a past
    release, and a model sampled without :func:`use_release` first has a NaN log density.
    """
    names = set(private.named_vars)
    for container in list(private.data_vars):
        release = container.tag.__dict__.get(_BOUNDED_TAG)
        if release is None:
            continue
        nan = float("nan")
        container.tag.__dict__[_BOUNDED_TAG] = replace(
            release,
            noisy=np.full(release.noisy.shape, nan),
            table=np.full(release.table.shape, nan),
            public_n=None if release.public_n is None else np.full(release.public_n.shape, nan),
            scale=nan,
        )
        for suffix in _RELEASED_CONTAINERS:
            if f"{release.observed}{suffix}" in names:
                filled = private[f"{release.observed}{suffix}"]
                value = np.asarray(filled.get_value())
                filled.set_value(np.full(value.shape, nan, dtype=value.dtype))


_RELEASED_CONTAINERS = (
    "_released_statistics",
    "_projected_statistics",
    "_noise_scale",
    "_public_n",
)
"""Suffixes of the data containers :func:`add_released_likelihood` fills with a release."""


def _moved_parameters(
    private: pm.Model, source: pm.Model, graphs: Mapping[str, Variable], observed: str
) -> dict[str, Variable]:
    """The parameter graphs of ``source`` with every named variable replaced by its copy in
    ``private`` (free variables, Deterministics, public data containers)."""
    replace = {
        var: private[var.name]
        for var in (*source.free_RVs, *source.deterministics, *source.data_vars)
        if var.name in private.named_vars
    }
    roles = list(graphs)
    moved = graph_replace([graphs[role] for role in roles], replace=replace, strict=False)
    known = set(private.basic_RVs) | set(private.data_vars) | set(private.dim_lengths.values())
    for graph in moved:
        for leaf in ancestors([graph], blockers=list(known)):
            outside = (leaf.owner is not None and isinstance(leaf.owner.op, RandomVariable)) or (
                isinstance(leaf, SharedVariable) and leaf not in known
            )
            if outside and leaf not in known and not _is_rng(leaf):
                raise NonPrivateModelError(
                    f"{observed}: its parameters read {leaf.name or leaf}, which the private "
                    "model does not hold (only free variables, Deterministics and public data "
                    "may be read). Nothing was sampled; a release already made stays in the "
                    "ledger."
                )
    return dict(zip(roles, moved, strict=True))


def _is_rng(variable: Variable) -> bool:
    return isinstance(variable, SharedVariable) and "Generator" in str(variable.type)


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
