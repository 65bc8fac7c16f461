"""Private sampling of a naive-Bayes HMM: Laplace counts or one posterior sample (OPS).

Called by :func:`pymc_dp.sample` when the model was built by
:func:`pymc_dp.models.naive_bayes_hmm`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import pymc as pm
import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.compiling import announce, numba_needs_compiling
from pymc_dp.hmm._kernels import KERNELS
from pymc_dp.hmm.cells import CellCounts, release_event_of, validate_counts
from pymc_dp.hmm.privacy import (
    PROJECTIONS,
    gibbs_sweep_events,
    gibbs_sweep_weight,
    ops_cost,
    ops_release_event,
    release_cell_counts,
)
from pymc_dp.inference import check_inference
from pymc_dp.ledger import validate_epsilon
from pymc_dp.mechanisms.exponential import calibrate_temperature, calibrate_temperature_tight
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.tempered import charge_events, request_accounting
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.hmm_gibbs import METHODS, NaiveBayesHMMGibbs
from pymc_dp.steps.noise import flag_seeded_draws, noise_seed_from
from pymc_dp.traces import (
    RELEASED_GROUP,
    discard_on_error,
    keep_groups,
    last_draw,
    quiet_unreleased,
    refuse_leaky_options,
)

__all__ = ["HMM_MECHANISMS", "run_hmm"]

EXPONENTIAL_GIBBS_SOURCE = (
    "Foulds et al. 2016, §4.1 eq. (19)-(20), Theorem 1: every Gibbs update is an exponential "
    "mechanism at temperature T; costs compose over all updates of all sweeps"
)
HMM_MECHANISMS = ("laplace", "ops", "gibbs-exponential")
_KEPT_GROUPS = ("posterior", "sample_stats")


def run_hmm(request: RunRequest, recognised: Recognised) -> xr.DataTree:
    """Sample a naive-Bayes HMM privately; returns the stripped trace with its releases.

    ``mechanism="laplace"``: release the count tensor once (one event, Laplace(2·D/ε)), rebuild
    the model on the noisy counts, and run :class:`~pymc_dp.NaiveBayesHMMGibbs` on it; every draw,
    chain and tuning step is post-processing. ``projection`` (a keyword of
    ``pymc_dp.sample`` for HMMs) is ``"cell"`` (clamp each entry at 0, as Foulds et al.)
    or ``"none"``, see :func:`~pymc_dp.hmm.release_cell_counts`. Released group: ``cell_counts``.
    ``request.inference``: ``"plugin"`` samples the HMM as if the released counts were exact;
    ``"noise-aware"`` treats them as Laplace observations of latent true counts
    (:mod:`pymc_dp.hmm.noise_aware`; needs ``hmm_method="ffbs"``); None is
    :data:`pymc_dp.inference.DEFAULT_INFERENCE`. Either way it is the same release and the
    same single ledger event: the inference is post-processing.

    ``mechanism="ops"``: run :class:`~pymc_dp.NaiveBayesHMMGibbs` on the raw counts at temperature
    T = max(1, 2Δ/ε_c), ε_c = ε / chains, and keep **only the last draw of each chain**. The
    event (ε = chains·ε_c) says the guarantee assumes convergence and gives the worst-case
    composed ε of all sweeps, tuning included.

    ``mechanism="gibbs-exponential"``: every draw is released, all sweeps compose. The run
    charges one event per kind of update (states; the pair updates of the features with the
    same Δ_d), each standing for its ``compositions`` identical exponential mechanisms, so
    that tight accounting composes the updates, not whole sweeps
    (:func:`~pymc_dp.hmm.privacy.gibbs_sweep_events`).

    ``accounting="tight"`` (``request.accounting``, with 0 < ``request.delta`` < 1; the
    tempered mechanisms only): T is the lowest at which the run's events compose to ε at δ
    (:func:`~pymc_dp.mechanisms.exponential.calibrate_temperature_tight`): the run is
    (ε, δ)-DP, its ledger's basic total is above ε (a budgeted ledger must be created with
    ``tight_budget=True``).

    The tempered mechanisms (``"ops"``, ``"gibbs-exponential"``) sample the posterior itself,
    at a temperature: they take no ``inference``.

    Every option is checked before anything is released or sampled.

    Raises
    ------
    ValueError
        For an unknown mechanism, method or inference, ``inference`` with a tempered
        mechanism, noise-aware inference with ``hmm_method="collapsed"``, an untruncated model
        under OPS (Δ = ∞), a model built on already-released counts, add/remove-one
        neighbours with a posterior-sampling mechanism, or options these mechanisms cannot
        honour.
    BudgetExceededError
        If the release would exceed the budget (nothing is released, nothing is sampled).
    """
    spec, mechanism, kwargs = recognised.blocks, request.mechanism, request.sample_kwargs
    if mechanism not in HMM_MECHANISMS:
        raise ValueError(f"an HMM is released with one of {HMM_MECHANISMS}, got {mechanism!r}")
    if request.step is not None:
        raise ValueError("a naive-Bayes HMM takes hmm_method='ffbs'|'collapsed', not step")
    if request.epsilon is None or isinstance(request.epsilon, Mapping):
        raise ValueError("a naive-Bayes HMM needs one total epsilon (a float)")
    epsilon = validate_epsilon(request.epsilon)
    if release_event_of(spec.counts) is not None:
        raise ValueError(
            "this model is built on released counts: sample it with pm.sample and "
            "NaiveBayesHMMGibbs (post-processing); its cost is the release's ledger event"
        )
    if spec.counts.noisy:
        raise ValueError(
            "this model is built on counts flagged noisy=True that release_cell_counts did not "
            "return, so nothing shows they were released: build the model on the raw counts "
            "(noisy=False) and let pymc_dp.sample release them, or on the counts "
            "release_cell_counts returned. Nothing was released."
        )
    method = kwargs.pop("hmm_method", "ffbs")
    projection = kwargs.pop("projection", "cell")
    if method not in METHODS:
        raise ValueError(f"hmm_method must be one of {METHODS}, got {method!r}")
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    inference = _inference(mechanism, request.inference, method)
    if mechanism != "laplace" and request.neighbouring != "replace-one":
        raise ValueError(
            f"the HMM's mechanism={mechanism!r} is calibrated for replace-one neighbours "
            "(Δ bounds a replaced record). Nothing was sampled."
        )
    if mechanism == "ops" and request.release not in (None, "last"):
        raise ValueError(
            f"release={request.release!r}: the HMM's OPS releases the last draw of each chain "
            "only (release='last' or None). Nothing was sampled."
        )
    if mechanism == "gibbs-exponential" and request.release not in (None, "chain"):
        raise ValueError(
            f"release={request.release!r}: mechanism='gibbs-exponential' releases the whole "
            "chain (release='chain' or None). Nothing was sampled."
        )
    if mechanism == "laplace":
        if request.release is not None:
            raise ValueError(
                f"release={request.release!r}: the HMM's Laplace path releases the counts once "
                "and every draw is post-processing, so it takes no release (None). Nothing was "
                "released."
            )
        noisy = release_cell_counts(
            spec.counts,
            epsilon,
            ledger=request.ledger,
            neighbouring=request.neighbouring,
            backend=request.noise_backend,
            rng=request.noise_rng,
            variables=spec.variable_names,
            projection=projection,
        )
        _announce_kernels()
        idata, released = _sample_laplace(spec, noisy, request.draws, method, inference, kwargs)
        idata[RELEASED_GROUP] = released
        idata[RELEASED_GROUP].attrs["inference"] = inference
        return idata
    ledger, neighbouring = request.ledger, request.neighbouring
    accounting = request_accounting(request)
    if accounting == "tight" and mechanism == "laplace":
        raise ValueError("accounting='tight' is for the tempered mechanisms")
    delta = float(request.delta) if accounting == "tight" else 0.0
    if request.delta and accounting == "basic":
        raise ValueError(
            f"the HMM's mechanism={mechanism!r} is pure ε-DP: delta must be 0, or ask for "
            "accounting='tight'. Nothing was sampled."
        )
    _announce_kernels()
    if mechanism == "gibbs-exponential":
        return _sample_exponential_gibbs(
            spec, request.draws, epsilon, neighbouring, ledger, request.noise_rng, kwargs, delta
        )
    return _sample_ops(
        spec, request.draws, epsilon, neighbouring, ledger, method, request.noise_rng, kwargs, delta
    )


def _announce_kernels() -> None:
    """Say so before sampling when the HMM's numba kernels compile (first run on a machine)."""
    announce("the naive-Bayes HMM's numba kernels", numba_needs_compiling(*KERNELS))


def _validated_raw_counts(counts: CellCounts) -> CellCounts:
    """A validated snapshot of the raw counts the tempered mechanisms sample.

    The counts were checked when counted, but the tensor is a mutable array: it may have been
    edited in place since (negative, fractional, NaN, inconsistent across features). The same
    check as the Laplace release (:func:`~pymc_dp.hmm.validate_counts`, naming the features)
    runs before the budget is checked, anything is charged or the noise generator is drawn
    from; the model is then built on a copy, so a later edit cannot reach the sampler.
    """
    validate_counts(counts.counts, counts.n_categories, raw=True, features=counts.features)
    return counts.with_counts(counts.counts.copy())


def _sample_exponential_gibbs(
    spec, draws, epsilon, neighbouring, ledger, noise_rng, kwargs, delta=0.0
):
    """Release every draw: each update is an exponential mechanism, all updates compose.

    Foulds et al. 2016, §4.1 eq. (19)-(20): an update at temperature T costs 2Δ_l/T. One
    FFBS sweep costs W/T with W = 2Δ + Σ_d (K_d − 1)·2Δ_d
    (:func:`~pymc_dp.hmm.privacy.gibbs_sweep_weight`), so n = chains × (tune + draws) sweeps
    — tuning included, every kept draw depends on it — cost ε at T = max(1, n·W/ε)
    (:func:`~pymc_dp.mechanisms.exponential.calibrate_temperature`); with δ > 0 (tight
    accounting), at the lowest T whose update events compose to ε at δ. No convergence
    assumption is needed.

    The raw counts are re-validated first; the secret noise seed is drawn from ``noise_rng``
    only after the budget check.
    """
    if neighbouring != "replace-one":
        raise ValueError("the HMM's exponential-mechanism Gibbs is calibrated for replace-one")
    counts = _validated_raw_counts(spec.counts)
    chains = int(kwargs.setdefault("chains", 1))
    n_sweeps = chains * (int(kwargs.setdefault("tune", 1000)) + int(draws))
    n_categories = spec.counts.n_categories
    calibration = calibrate_temperature(
        gibbs_sweep_weight(n_categories, spec.lower), epsilon, n_sweeps
    )

    def events_at(temperature: float):
        return gibbs_sweep_events(
            n_categories,
            spec.lower,
            temperature=temperature,
            n_sweeps=n_sweeps,
            neighbouring=neighbouring,
            variable_names=spec.variable_names,
            source=EXPONENTIAL_GIBBS_SOURCE,
        )

    temperature, note = calibration.temperature, ""
    if delta:
        tight = calibrate_temperature_tight(
            events_at, epsilon, delta, basic_temperature=calibration.temperature
        )
        temperature, note = tight.temperature, _tight_note(tight)
    # charged before sampling: an exception while sampling cannot leave draws uncharged
    charge_events(
        ledger,
        flag_seeded_draws(_noted(events_at(temperature), note), seeded=noise_rng is not None),
    )
    noise_seed = noise_seed_from(noise_rng)  # the sampler's draws are the privacy noise
    with spec.rebuild(counts), route_context():
        step = NaiveBayesHMMGibbs(temperature=temperature, noise_seed=noise_seed)
        idata = pm.sample(draws, step=step, **kwargs)
    return keep_groups(idata, _KEPT_GROUPS)


def _tight_note(tight) -> str:
    return (
        f"; T calibrated for (ε = {tight.target_epsilon:g}, δ = {tight.delta:g}) by "
        f"{tight.composition.method} composition (basic composition: T = "
        f"{tight.basic_temperature:.4g})"
    )


def _noted(events, note: str):
    return [dataclasses.replace(e, statistic=e.statistic + note) for e in events]


def _inference(mechanism: str, inference: str | None, method: str) -> str | None:
    """The checked inference of a run (None for the tempered mechanisms)."""
    if mechanism != "laplace":
        if inference is not None:
            raise ValueError(
                f"mechanism={mechanism!r} samples the HMM's posterior itself (at a "
                f"temperature), so it takes no inference (got {inference!r}); inference is "
                "for mechanism='laplace'. Nothing was sampled."
            )
        return None
    inference = check_inference(inference)
    if inference == "noise-aware" and method != "ffbs":
        raise ValueError(
            "inference='noise-aware' samples the states by FFBS: use hmm_method='ffbs'. "
            "Nothing was released."
        )
    return inference


def _sample_laplace(spec, noisy, draws, method, inference, kwargs):
    private = spec.rebuild(noisy)
    with private, warnings.catch_warnings():
        # R-hat of a state that never moves divides 0 by 0 in ArviZ: noise, not a diagnosis
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        step = NaiveBayesHMMGibbs(method=method, inference=inference)
        idata = pm.sample(draws, step=step, **kwargs)
    released = xr.Dataset({"cell_counts": noisy.to_dataarray()})
    return keep_groups(idata, _KEPT_GROUPS), released


def _sample_ops(spec, draws, epsilon, neighbouring, ledger, method, noise_rng, kwargs, delta=0.0):
    """Release the last draw of each chain (OPS); the raw counts are re-validated first and
    the secret noise seed is drawn from ``noise_rng`` only after the budget check."""
    refuse_leaky_options(kwargs)
    counts = _validated_raw_counts(spec.counts)
    chains = int(kwargs.get("chains") or 1)
    kwargs["chains"] = chains
    tune = int(kwargs.setdefault("tune", 1000))
    n_categories = spec.counts.n_categories
    cost = ops_cost(n_categories, spec.lower, epsilon / chains)
    note = ""

    def event_at(temperature: float):
        per_chain = ops_cost(n_categories, spec.lower, 2 * cost.log_likelihood_bound / temperature)
        return ops_release_event(
            per_chain,
            n_sweeps=tune + draws,
            n_chains=chains,
            neighbouring=neighbouring,
            variables=spec.variable_names,
        )

    if delta:
        tight = calibrate_temperature_tight(
            lambda t: [event_at(t)], epsilon, delta, basic_temperature=cost.temperature
        )
        cost = ops_cost(n_categories, spec.lower, 2 * cost.log_likelihood_bound / tight.temperature)
        note = _tight_note(tight)
    event = ops_release_event(
        cost,
        n_sweeps=tune + draws,
        n_chains=chains,
        neighbouring=neighbouring,
        variables=spec.variable_names,
    )
    # charged before sampling: an exception while sampling cannot leave draws uncharged
    charge_events(ledger, flag_seeded_draws(_noted([event], note), seeded=noise_rng is not None))
    noise_seed = noise_seed_from(noise_rng)  # the sampler's draws are the privacy noise
    model = spec.rebuild(counts)

    def sample() -> xr.DataTree:
        with model, route_context(), quiet_unreleased():  # only the last draw is released
            step = NaiveBayesHMMGibbs(
                method=method, temperature=cost.temperature, noise_seed=noise_seed
            )
            return last_draw(pm.sample(draws, step=step, **kwargs))

    return discard_on_error(sample)
