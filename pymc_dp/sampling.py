"""``pymc_dp.sample``: private posterior sampling of a PyMC model, with its privacy ledger.

Data path: analyse the model (refuse anything non-private) → validate every record → check
the whole cost against the budget → release each observed variable's sufficient statistics
once (Laplace; ledger events recorded before the values are used) → build the private model
(raw data replaced by the releases) → ``pm.sample`` with :class:`PrivateConjugateGibbs` for the
released variables and PyMC's own samplers for the rest → keep only posterior and sampler
groups → attach the released statistics and the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from pymc_dp.conjugacy import analyse_model
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.hmm.sampling import sample_hmm
from pymc_dp.ledger import PrivacyLedger, validate_delta, validate_neighbouring
from pymc_dp.mechanisms.laplace import NoiseBackend
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of
from pymc_dp.private_model import build_private_model
from pymc_dp.release import ReleasedStatistics, release_all
from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.noise import noise_seed_from
from pymc_dp.tempered.sampling import sample_tempered
from pymc_dp.traces import SAFE_GROUPS, keep_groups

__all__ = ["MECHANISMS", "RELEASED_GROUP", "SAFE_GROUPS", "private_trace", "sample"]

MECHANISMS: tuple[str, ...] = ("laplace", "ops", "gibbs-exponential", "metropolis")
RELEASED_GROUP = "released_statistics"
"""DataTree group holding the released noisy statistics (public by construction)."""


def sample(
    draws: int = 1000,
    *,
    epsilon: float | Mapping[str, float] | None = None,
    delta: float = 0.0,
    neighbouring: str = "replace-one",
    mechanism: str = "laplace",
    release: str | None = None,
    budget: float | tuple[float, float] | None = None,
    ledger: PrivacyLedger | None = None,
    noise_backend: NoiseBackend = "opendp",
    noise_rng: np.random.Generator | None = None,
    max_trials: Mapping[str, int] | None = None,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    tempering: str | None = None,
    step: PrivateConjugateGibbs | Sequence[PrivateConjugateGibbs] | None = None,
    model: pm.Model | None = None,
    **kwargs,
) -> xr.DataTree:
    """Sample the posterior of the model in context, privately, and return a private trace.

    With ``mechanism="laplace"`` (default) every observed variable must be a supported
    conjugate likelihood (see :mod:`pymc_dp.conjugacy`); its sufficient statistics are
    released once with the Laplace mechanism (Foulds et al. 2016, §3.2 eq. 16–17) and its
    conjugate parent is sampled by :class:`~pymc_dp.PrivateConjugateGibbs` (§4.2). Variables
    that read no private data are sampled by PyMC's samplers (e.g. NUTS) on the private model.
    The other mechanisms sample the posterior at a temperature T set from ε and the
    log-likelihood bound Δ (:mod:`pymc_dp.tempered.sampling`). A model is refused — never
    sampled non-privately — if any observed variable cannot be handled.

    Guarantee: the returned trace is (ε, δ)-DP under ``neighbouring``, with (ε, δ) the
    composition of this run's ledger events. For ``"laplace"`` draws, chains and cores are
    post-processing; for the other mechanisms their cost is in the ledger, and an event flagged
    ``assumes_convergence`` holds only for a converged chain (its ``worst_case_epsilon``, when
    given, holds without that assumption).

    Parameters
    ----------
    draws : int
        Draws per chain (as ``pm.sample``).
    epsilon : float or dict
        Total epsilon, split equally across the observed variables' releases, or
        ``{observed name: epsilon}`` (Laplace only). Not needed for releases made by ``step``.
    delta : float
        Delta allotted to the run (0 <= delta < 1). Only ``"metropolis"`` with
        ``release="chain"`` spends δ (its declared bound on rejections).
    neighbouring : {"replace-one", "add-remove-one"}
        "replace-one" (default; n public) or "add-remove-one" (Laplace only).
    mechanism : {"laplace", "ops", "gibbs-exponential", "metropolis"}
        ``"laplace"`` (default): Laplace-privatised sufficient statistics (count tensor for a
        naive-Bayes HMM).
        ``"ops"``: one posterior sample at T = 2Δ/ε per released draw (Foulds §3.1 eq. 14).
        Exact, independent draws when the model's blocks allow it; otherwise the last draw
        of each chain, flagged ``assumes_convergence``. For naive-Bayes HMMs see
        :func:`pymc_dp.hmm.sampling.sample_hmm`.
        ``"gibbs-exponential"``: every Gibbs update is an exponential mechanism and every draw
        is released; all sweeps, tuning included, compose to ε (Foulds §4.1 eq. 19–20).
        ``"metropolis"``: random-walk Metropolis at T = 2Δ/ε_step with a public, fixed
        ``proposal_scale`` (Foulds Theorem C.1); under ``release="chain"`` ``delta`` is the
        declared bound on rejections.
        The three tempered mechanisms take models whose likelihoods read truncated priors
        (Bernoulli/Binomial ← truncated Beta, Categorical/Multinomial ← TruncatedDirichlet,
        Poisson ← truncated Gamma, Normal with constant σ ← truncated Normal), see
        :mod:`pymc_dp.tempered.analysis`.
    release : {"last", "chain"}, optional
        Which draws the tempered mechanisms release: the last draw of each chain (default for
        ``"ops"`` and ``"metropolis"``) or every draw (``"gibbs-exponential"`` always).
        The Laplace path releases statistics, so every draw is free and ``release`` must be
        None; the HMM's OPS supports "last" only.
    budget : float or (float, float), optional
        (epsilon, delta) budget for a new ledger; exclusive with ``ledger``.
    ledger : PrivacyLedger, optional
        Ledger to charge (e.g. shared across analyses of the same records). It is updated in
        place; the trace's ledger lists this run's events.
    noise_backend : {"opendp", "numpy"}
        OpenDP (default, floating-point safe) or NumPy (tests only).
    noise_rng : numpy.random.Generator, optional
        Source of the privacy noise when it is not OpenDP's: the NumPy Laplace backend, and
        the secret seed of the sampler's draws for the posterior-sampling mechanisms (whose
        draws are the noise, :mod:`pymc_dp.steps.noise`). Default: fresh OS entropy. Keep it
        independent of ``random_seed``: a published sampling seed must never reproduce the
        privacy noise.
    max_trials : dict, optional
        ``{observed name: M}`` for Binomial/Multinomial likelihoods with per-record trials.
    data_bounds : dict, optional
        ``{observed name: (low, high)}``: declared range of Poisson counts or Normal values,
        chosen without looking at the data (tempered mechanisms; records outside raise).
    disjoint : sequence of sequences of str, optional
        Groups of observed variables that hold different people by a public split (tempered
        mechanisms): each group composes in parallel instead of adding.
    step : PrivateConjugateGibbs or list, optional
        Already-constructed private steps; their releases are reused (no new release).
    model : pm.Model, optional
    **kwargs
        Passed to ``pm.sample`` (``tune``, ``chains``, ``cores``, ``random_seed``,
        ``progressbar``, ``nuts={...}``, ...).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``sample_stats`` (and warm-up groups if kept),
        ``released_statistics`` and ``privacy_ledger``; root attribute ``pymc_dp_ledger``
        (JSON). No ``observed_data``, ``constant_data`` or ``log_likelihood``.

    Raises
    ------
    NonPrivateModelError
        If some observed variable cannot be released privately.
    InvalidPrivateDataError
        If a record lies outside its declared domain (NaN, out of support, unknown category,
        too many trials), before any noise is drawn.
    BudgetExceededError
        If the releases would exceed the budget (nothing is released).
    ValueError
        For invalid epsilon, delta, neighbouring, mechanism or options.
    """
    model = modelcontext(model)
    validate_delta(delta)
    validate_neighbouring(neighbouring)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if kwargs.get("return_inferencedata", True) is False:
        raise ValueError("pymc_dp.sample always returns a DataTree (it carries the ledger)")
    if ledger is not None and budget is not None:
        raise ValueError("give either a ledger (with its own budget) or a budget, not both")
    run_ledger = ledger if ledger is not None else PrivacyLedger(budget=budget)
    spent_before = len(run_ledger)
    spec = hmm_spec_of(model)
    if mechanism == "laplace" and release is not None:
        raise ValueError("the Laplace path releases statistics once; every draw is free")
    if spec is None and mechanism != "laplace":
        if epsilon is None or isinstance(epsilon, Mapping) or step is not None:
            raise ValueError(f"mechanism={mechanism!r} needs one total epsilon and no step")
        idata = sample_tempered(
            model,
            draws,
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            release=release,
            ledger=run_ledger,
            neighbouring=neighbouring,
            data_bounds=data_bounds,
            max_trials=max_trials,
            disjoint=disjoint,
            noise_seed=noise_seed_from(noise_rng),
            tempering=tempering,
            **kwargs,
        )
        return _run_ledger(run_ledger, spent_before).attach(idata)
    if spec is not None and mechanism == "ops" and release not in (None, "last"):
        raise ValueError("the HMM's OPS releases the last draw of each chain only")
    if spec is not None and mechanism == "gibbs-exponential" and release not in (None, "chain"):
        raise ValueError("mechanism='gibbs-exponential' releases the whole chain")
    if spec is not None:
        if step is not None or max_trials is not None:
            raise ValueError("a naive-Bayes HMM takes hmm_method='ffbs'|'collapsed', not step")
        if epsilon is None or isinstance(epsilon, Mapping):
            raise ValueError("a naive-Bayes HMM needs one total epsilon (a float)")
        idata, released = sample_hmm(
            spec,
            draws,
            epsilon=epsilon,
            mechanism=mechanism,
            neighbouring=neighbouring,
            ledger=run_ledger,
            noise_backend=noise_backend,
            noise_rng=noise_rng,
            **kwargs,
        )
        idata[RELEASED_GROUP] = released
        return _run_ledger(run_ledger, spent_before).attach(idata)

    provided = _as_private_steps(step)
    releases = _adopt_step_releases(provided, run_ledger)
    done = {r.observed for r in releases}
    links = [link for name, link in analyse_model(model, max_trials).items() if name not in done]
    if links and epsilon is None:
        raise ValueError(f"epsilon is required to release {[link.observed for link in links]}")
    if not links and epsilon is not None:
        raise ValueError("every observed variable was already released by `step`; drop epsilon")
    releases += (
        release_all(
            links,
            epsilon if epsilon is not None else {},
            ledger=run_ledger,
            neighbouring=neighbouring,
            backend=noise_backend,
            rng=noise_rng,
        )
        if links
        else []
    )

    private = build_private_model(model, releases)
    released_priors = sorted({r.prior for r in releases})
    with private:
        steps = [PrivateConjugateGibbs([private[name] for name in released_priors])]
        idata = pm.sample(draws, step=steps, model=private, **kwargs)
    return private_trace(idata, releases, _run_ledger(run_ledger, spent_before), model)


def _run_ledger(ledger: PrivacyLedger, spent_before: int) -> PrivacyLedger:
    """This run's events (a shared ledger may hold earlier ones), under the same budget."""
    return PrivacyLedger(budget=ledger.budget, events=ledger.events[spent_before:])


def private_trace(
    idata: xr.DataTree,
    releases: Sequence[ReleasedStatistics],
    ledger: PrivacyLedger,
    model: pm.Model | None = None,
) -> xr.DataTree:
    """Strip every group that could read raw data, then attach releases and ledger.

    Keeps only :data:`SAFE_GROUPS`; adds group ``released_statistics`` (noisy statistics as
    released, and their projection) and the ledger (:meth:`PrivacyLedger.attach`).
    """
    keep_groups(idata)
    idata[RELEASED_GROUP] = released_statistics_dataset(releases, model)
    return ledger.attach(idata)


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
    observed = [r.observed for r in releases]
    if len(observed) != len(set(observed)):
        raise NonPrivateModelError(f"an observed variable was released twice: {observed}")
    return releases
