"""``pymc_dp.sample`` with ``mechanism="ops" | "gibbs-exponential" | "metropolis"``.

Every mechanism here samples the model's posterior at a temperature T >= 1 and is calibrated
by Δ, the largest change of the log-likelihood when one record is replaced (Foulds et al.
2016, eq. 9 and 13; :mod:`pymc_dp.analysis.tempered`). Neighbours are replace-one.

``mechanism="ops"`` — one posterior sample (§2.2, §3.1 eq. 10 and 14). Each released draw is
one draw of the tempered joint Pr(θ, X)^{1/T} and costs 2Δ/T (the exponential mechanism).

* When the tempered joint factorises into exactly samplable blocks (truncated Beta, Gamma or
  Normal priors, or two-category truncated Dirichlets, with constant parameters and no other
  free variable), every draw is an exact,
  independent draw: :class:`~pymc_dp.TemperedConjugateGibbs` is run without tuning
  and no convergence is assumed. ``release="last"`` releases one draw per chain at
  ε/chains each; ``release="chain"`` releases every draw at ε/(chains·draws) each.
* Otherwise (hyperpriors, or a K > 2 truncated Dirichlet block updated by the Fang et al. kernel)
  the draw comes from MCMC: only ``release="last"`` is offered, the last draw of each chain
  is kept, and its event is flagged ``assumes_convergence`` with the ``worst_case_epsilon``
  of composing every update of every sweep, tuning included (the paper's 400ε example).

``mechanism="gibbs-exponential"`` — exponential-mechanism Gibbs (§4.1 eq. 19–20). Every
update of every sweep is an exponential mechanism and every draw is released: n = chains ×
(tune + draws) sweeps compose, tuning included because every kept draw depends on it. One T
for all blocks, T = n·W/ε with W the per-record cost of one sweep at T = 1
(:meth:`~pymc_dp.analysis.tempered.TemperedModel.sweep_weight`). No convergence assumption.

``mechanism="metropolis"`` — private Metropolis (App. C.1, Theorem C.1), see
:class:`~pymc_dp.PrivateMetropolis`.

``tempering="joint"`` tempers prior and likelihood, Pr(θ, X)^{1/T} (Foulds eq. 10, 14);
``tempering="likelihood"`` tempers the likelihood only, π(θ)·Pr(X | θ)^{1/T} (the Gibbs
posterior of Minami et al. 2016). Both are the exponential mechanism with the same Δ and cost
(the prior is a data-independent base measure); the second keeps informative priors and
hyperpriors from being flattened by a large T. The default is the paper's joint tempering,
or the likelihood's when the model has hyperpriors: a hyperprior raised to 1/T may not be
integrable (explicit joint tempering then warns).

Events. Each run charges one event whose ``compositions`` k says how many identical releases
it stands for, so that tight accounting (:func:`pymc_dp.accounting.epsilon_at`) sees the
structure; its ε is the basic total, as before. OPS: k = the released draws (each 2Δ/T).
Gibbs: k = sweeps × updates per sweep when every update of a sweep is the same exponential
mechanism (one block, or blocks with equal Δ and no parallel saving between them), each
update (2Δ_l/T)-DP and bounded range; otherwise k = sweeps, each sweep (W/T)-DP and W/T
bounded range (the per-update widths add). Metropolis: k = steps (``release="chain"``) or
chains (``"last"``).

``accounting="tight"`` (with 0 < δ < 1; ``"ops"`` and ``"gibbs-exponential"``): T is the
lowest at which the run's events compose to ε at δ by the tightest valid accounting
(:func:`pymc_dp.mechanisms.exponential.calibrate_temperature_tight`), not the highest at which
their ε add up to ε. The run is then (ε, δ)-DP instead of (ε, 0)-DP, its ledger's basic total
is above ε, and a ledger with a budget accepts it only if created with ``tight_budget=True``
(a session never does). Valid because the run's releases and their parameters are fixed before
the first draw (see :mod:`pymc_dp.accounting`, "What this does not cover").

In every case: T is capped at 1 and only what is spent is charged (never a sharpened posterior;
§2.2 "cap ε at 2Δ"; :func:`pymc_dp.mechanisms.exponential.calibrate_temperature` with the cost
of one release at T = 1: 2Δ per draw or step, W per sweep); the whole cost is checked against
the budget before anything is sampled (``BudgetExceededError``, nothing drawn); the event is
recorded before ``pm.sample`` is called, so an exception raised while sampling (a keyboard
interrupt, a failing option) never leaves draws of the private records uncharged; the
Metropolis chain's own rejection rate, which the event cannot know in advance, is in the
trace instead (``sample_stats`` attributes; a warning when it contradicts the assumed
bound); hyperpriors are sampled by PyMC on the data-free model
(:func:`pymc_dp.analysis.rewrite.data_free_model`; tempered at the same T under joint
tempering), so no sampler other than the private step reads a record, and the trace carries no
raw data (nor ``lp``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pymc as pm
import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.analysis.rewrite import data_free_model
from pymc_dp.analysis.tempered import TemperedModel
from pymc_dp.families.tempered import TEMPERING
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_epsilon
from pymc_dp.mechanisms.exponential import (
    ACCOUNTINGS,
    TemperatureCalibration,
    calibrate_temperature,
    calibrate_temperature_tight,
)
from pymc_dp.routes.base import RunRequest
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.noise import flag_seeded_draws, noise_seed_from
from pymc_dp.steps.private_metropolis import PrivateMetropolis, validate_proposal_scale
from pymc_dp.steps.tempered_gibbs import TemperedConjugateGibbs
from pymc_dp.tempering import temper
from pymc_dp.traces import (
    discard_on_error,
    keep_groups,
    last_draw,
    quiet_unreleased,
    refuse_leaky_options,
)

__all__ = ["RELEASES", "TEMPERED_MECHANISMS", "request_accounting", "run_tempered"]

RELEASES = ("last", "chain")
TEMPERED_MECHANISMS = ("ops", "gibbs-exponential", "metropolis")
OPS_SOURCE = (
    "Foulds et al. 2016, §3.1 eq. (10), (14): one posterior sample at T = 2Δ/ε per draw, "
    "Δ of eq. (9)/(13) per pymc_dp.families.bounds; sequential composition over draws"
)
GIBBS_SOURCE = (
    "Foulds et al. 2016, §4.1 eq. (19)-(20), Theorem 1: every Gibbs update is an exponential "
    "mechanism at temperature T costing 2Δ_l/T; all updates of all sweeps compose"
)
METROPOLIS_SOURCE = (
    "Foulds et al. 2016, App. C.1 eq. (62) and Theorem C.1: symmetric random-walk Metropolis at "
    "T = 2Δ/ε_step is (ε_step, δ_step)-DP per step if Pr(reject) <= δ_step (declared)"
)


def run_tempered(request: RunRequest, recognised: Recognised) -> xr.DataTree:
    """Sample the recognised blocks privately at temperature T (see the module docstring).

    The recogniser has already refused and validated; this function checks the options,
    computes T and the cost, checks the budget, records the event, samples and strips.
    ``request.noise_rng`` seeds the secret entropy of the private step's draws
    (:mod:`pymc_dp.steps.noise`); ``random_seed`` alone never reproduces them.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (and ``sample_stats`` when every draw is released); nothing that reads
        raw data. The caller attaches the ledger.

    Raises
    ------
    ValueError
        For add/remove-one neighbours, an unknown release, ``release="chain"`` with OPS through
        MCMC, Metropolis ``release="chain"`` without ``assume_rejection_bound=True``, or
        options a mechanism cannot honour.
    BudgetExceededError
        If the whole cost exceeds the budget (nothing is sampled).
    """
    mechanism, epsilon, kwargs = request.mechanism, request.epsilon, request.sample_kwargs
    if request.neighbouring != "replace-one":
        raise ValueError(
            "posterior sampling at temperature T is calibrated for replace-one neighbours "
            "(Δ bounds a replaced record; n is public)"
        )
    if mechanism not in TEMPERED_MECHANISMS:
        raise ValueError(f"mechanism must be one of {TEMPERED_MECHANISMS}, got {mechanism!r}")
    if epsilon is None or isinstance(epsilon, Mapping) or request.step is not None:
        raise ValueError(f"mechanism={mechanism!r} needs one total epsilon and no step")
    validate_epsilon(epsilon)
    draws = int(request.draws)
    for option in ("step", "callback", "trace"):  # they would see draws that are not released
        if kwargs.get(option) is not None:
            raise ValueError(f"pymc_dp.sample does not take {option!r} for this mechanism")
    analysis = recognised.blocks
    release, delta = request.release, request.delta
    accounting = request_accounting(request)
    if mechanism == "metropolis" and accounting == "tight":
        raise ValueError(
            "accounting='tight' is for mechanism='ops' and 'gibbs-exponential' (exponential "
            "mechanisms); private Metropolis spends its δ on rejections. Nothing was sampled."
        )
    run = _Run(
        request.model,
        analysis,
        request.ledger,
        _tempering(request.tempering, analysis),
        noise_seed_from(request.noise_rng),
        request.public,
        accounting,
        float(delta) if accounting == "tight" else 0.0,
    )
    if mechanism == "metropolis":
        return _sample_metropolis(
            run, draws, epsilon, delta, release, request.assume_rejection_bound, kwargs
        )
    if delta and accounting == "basic":
        raise ValueError(
            f"mechanism={mechanism!r} is pure ε-DP: delta must be 0, or ask for "
            "accounting='tight' to spend (ε, δ) at a lower temperature"
        )
    if mechanism == "gibbs-exponential":
        if release not in (None, "chain"):
            raise ValueError("mechanism='gibbs-exponential' releases every draw: release='chain'")
        return _sample_gibbs(run, draws, epsilon, kwargs)
    release = release or "last"
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    if analysis.exact:
        return _sample_exact_ops(run, draws, epsilon, release, kwargs)
    if release == "chain":
        raise ValueError(
            "these blocks are sampled by MCMC (hyperpriors or a truncated Dirichlet), so its "
            "draws are not independent one-posterior samples: use release='last', or "
            "mechanism='gibbs-exponential' to release every draw"
        )
    return _sample_converged_ops(run, draws, epsilon, kwargs)


def request_accounting(request: RunRequest) -> str:
    """The run's ``accounting`` ("basic" unless the request asks for "tight"), checked.

    Tight accounting needs the run's δ: 0 < ``request.delta`` < 1.

    Raises
    ------
    ValueError
        For an unknown accounting, or "tight" without a δ in (0, 1).
    """
    accounting = request.accounting
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    if accounting == "tight" and not 0.0 < float(request.delta) < 1.0:
        raise ValueError(
            "accounting='tight' meets ε at a δ: give delta in (0, 1), e.g. 1e-6 (at δ = 0 "
            "only basic composition is valid). Nothing was sampled."
        )
    return accounting


def charge_events(ledger: PrivacyLedger, events: Sequence[PrivacyEvent]) -> None:
    """Charge every event, after checking that all of them fit together (nothing is
    charged if one would not)."""
    check_events(ledger, events)
    for event in events:
        ledger.charge(event)


def check_events(ledger: PrivacyLedger, events: Sequence[PrivacyEvent]) -> None:
    """Raise :class:`~pymc_dp.BudgetExceededError` if ``events`` together would exceed the
    ledger's budget, each accounted by its mechanism as :meth:`PrivacyLedger.charge` would
    (checked on a copy: nothing is recorded)."""
    if ledger.budget is None:
        return
    probe = ledger.copy()
    for event in events:
        probe.charge(event)


def _tempering(tempering: str | None, analysis: TemperedModel) -> str:
    """The paper's joint tempering unless hyperpriors would be flattened (then likelihood).

    Raised to 1/T, a hyperprior's density can stop being integrable (a HalfCauchy scale with
    T >= 2 already), leaving OPS a target that does not exist; tempering the likelihood only
    costs the same.
    """
    hyperpriors = bool(analysis.others) or not all(b.constant_prior for b in analysis.blocks)
    if tempering is None:
        return "likelihood" if hyperpriors else "joint"
    if tempering not in TEMPERING:
        raise ValueError(f"tempering must be one of {TEMPERING}, got {tempering!r}")
    if tempering == "joint" and hyperpriors:
        warnings.warn(
            "tempering='joint' raises the hyperpriors to 1/T: their tempered density may not be "
            "integrable, and then the chain has no target. tempering='likelihood' costs the "
            "same.",
            UserWarning,
            stacklevel=3,
        )
    return tempering


@dataclass(frozen=True)
class _Run:
    """What every mechanism of one call shares: the model, its analysis and the options."""

    model: pm.Model
    analysis: TemperedModel
    ledger: PrivacyLedger
    tempering: str
    noise_seed: int | None
    public: frozenset[str] = frozenset()
    accounting: str = "basic"
    delta: float = 0.0  # the δ at which a tight run meets its ε

    def event(self, mechanism: str, *, statistic: str, source: str, **fields) -> PrivacyEvent:
        """The run's event (charged by :meth:`charge` before anything is sampled)."""
        if self.tempering == "likelihood":
            statistic += "; likelihood tempered, prior kept (base measure)"
        if self.analysis.disjoint:
            statistic += f"; parallel over disjoint {list(map(list, self.analysis.disjoint))}"
        fields.setdefault("sensitivity", self.analysis.record_log_likelihood_bound())
        return PrivacyEvent(
            mechanism=mechanism,
            delta=fields.pop("delta", 0.0),
            neighbouring="replace-one",
            variables=self.analysis.priors,
            noise_backend="numpy",
            statistic=statistic,
            source=source,
            **fields,
        )

    def temperature(
        self,
        calibration: TemperatureCalibration,
        events_at: Callable[[float], list[PrivacyEvent]],
        epsilon: float,
    ) -> tuple[float, str]:
        """T of the run, and what to add to its event's statistic: the basic calibration's,
        or under tight accounting the lowest T whose events compose to ε at δ."""
        if self.accounting == "basic":
            return calibration.temperature, ""
        tight = calibrate_temperature_tight(
            events_at, epsilon, self.delta, basic_temperature=calibration.temperature
        )
        return tight.temperature, _tight_note(tight)

    def charge(self, events: list[PrivacyEvent], note: str) -> None:
        """Check the budget for all of the run's events, then charge them — before anything
        is sampled, so that no exception raised while sampling leaves the run uncharged.
        Draws seeded from ``noise_rng`` are flagged as not a guarantee
        (:func:`~pymc_dp.steps.noise.flag_seeded_draws`)."""
        events = [dataclasses.replace(e, statistic=e.statistic + note) for e in events]
        events = flag_seeded_draws(events, seeded=self.noise_seed is not None)
        if self.accounting == "basic":
            self.ledger.check(
                math.fsum(e.epsilon for e in events), math.fsum(e.delta for e in events)
            )
        else:
            check_events(self.ledger, events)
        for event in events:
            self.ledger.charge(event)

    def private_step_trace(self, temperature: float, draws: int, kwargs) -> xr.DataTree:
        """pm.sample with the tempered step on the blocks and PyMC on the data-free rest."""
        sampling_model = data_free_model(self.model, self.public)
        if self.tempering == "joint":  # the hyperpriors' conditional of the tempered joint
            sampling_model = temper(sampling_model, temperature, part="joint")
        with sampling_model, route_context():
            step = TemperedConjugateGibbs(
                temperature=temperature,
                tempering=self.tempering,
                analysis=self.analysis,
                noise_seed=self.noise_seed,
            )
            idata = pm.sample(draws, step=[step], **kwargs)
        return _without_lp(keep_groups(idata))


def _without_lp(idata: xr.DataTree) -> xr.DataTree:
    """Drop the ``lp`` statistic: a log density is no estimate, and dropping it keeps any
    likelihood term out of the trace whatever the model (defence in depth)."""
    for group in ("sample_stats", "warmup_sample_stats"):
        if group in idata.children and "lp" in idata[group].data_vars:
            idata[group] = idata[group].to_dataset().drop_vars("lp")
    return idata


def _chains_and_sweeps(kwargs, draws: int) -> tuple[int, int]:
    """(chains, n = chains × (tune + draws)) with PyMC's default tune; sets both in kwargs."""
    chains = int(kwargs.setdefault("chains", 1))
    return chains, chains * (int(kwargs.setdefault("tune", 1000)) + int(draws))


def _sweep_releases(analysis: TemperedModel) -> tuple[int, float]:
    """(releases per sweep, Δ of each release's utility) for the Gibbs route's event.

    Every update of a sweep is an exponential mechanism (2Δ_l/T for block l, K − 1 of them
    for a Dirichlet block). When they all have the same Δ and add up to the sweep's weight
    (no parallel saving between blocks), each is one of k = sweeps × updates identical
    releases. Otherwise one sweep is the release: (W/T)-DP, and W/T bounded range (its
    updates' ranges add up, parallel within disjoint groups), Δ the record's bound.
    """
    bounds = [
        analysis.compose({lik.observed: lik.log_likelihood_bound for lik in block.likelihoods})
        for block in analysis.blocks
    ]
    updates = sum(block.mechanisms_per_update for block in analysis.blocks)
    same = all(math.isclose(b, bounds[0], rel_tol=1e-12) for b in bounds)
    if same and math.isclose(2.0 * updates * bounds[0], analysis.sweep_weight(), rel_tol=1e-12):
        return updates, bounds[0]
    return 1, analysis.record_log_likelihood_bound()


def _tight_note(tight) -> str:
    """What a tightly calibrated run adds to its event's statistic."""
    return (
        f"; T calibrated for (ε = {tight.target_epsilon:g}, δ = {tight.delta:g}) by "
        f"{tight.composition.method} composition (basic composition: T = "
        f"{tight.basic_temperature:.4g})"
    )


def _sample_gibbs(run: _Run, draws, epsilon, kwargs):
    chains, n_sweeps = _chains_and_sweeps(kwargs, draws)
    weight = run.analysis.sweep_weight()
    per_sweep, sensitivity = _sweep_releases(run.analysis)

    def events_at(temperature: float) -> list[PrivacyEvent]:
        release = "update" if per_sweep > 1 or len(run.analysis.blocks) == 1 else "sweep"
        return [
            run.event(
                "gibbs-exponential",
                epsilon=n_sweeps * weight / temperature,
                temperature=temperature,
                sensitivity=sensitivity,
                compositions=n_sweeps * per_sweep,
                statistic=(
                    f"every draw of {n_sweeps} Gibbs sweeps ({chains} chain(s), tuning "
                    f"included) at T = {temperature:.4g}; one sweep costs "
                    f"{weight / temperature:.4g}; {n_sweeps * per_sweep} {release} "
                    "releases compose"
                ),
                source=GIBBS_SOURCE,
            )
        ]

    calibration = calibrate_temperature(weight, epsilon, n_sweeps)
    temperature, note = run.temperature(calibration, events_at, epsilon)
    run.charge(events_at(temperature), note)
    return run.private_step_trace(temperature, draws, kwargs)


def _ops_events(
    run: _Run, n_releases: int, describe: Callable[[float], tuple[str, dict]]
) -> Callable[[float], list[PrivacyEvent]]:
    """The OPS event at temperature T: ``n_releases`` one-posterior-sample releases, each
    2Δ/T (Foulds §3.1 eq. 14); ``describe(T)`` gives its statistic and any further fields."""
    bound = run.analysis.record_log_likelihood_bound()

    def events_at(temperature: float) -> list[PrivacyEvent]:
        statistic, fields = describe(temperature)
        return [
            run.event(
                "ops",
                epsilon=n_releases * (2 * bound) / temperature,
                temperature=temperature,
                compositions=n_releases,
                statistic=statistic,
                source=OPS_SOURCE,
                **fields,
            )
        ]

    return events_at


def _sample_exact_ops(run: _Run, draws, epsilon, release, kwargs):
    if kwargs.get("tune"):
        raise ValueError("exact one-posterior-sample draws need no tuning: drop tune")
    chains = int(kwargs.setdefault("chains", 1))
    per_chain = 1 if release == "last" else int(draws)
    n_draws = chains * per_chain
    events_at = _ops_events(
        run,
        n_draws,
        lambda t: (f"{n_draws} exact independent draw(s) at T = {t:.4g} ({release})", {}),
    )
    calibration = calibrate_temperature(
        2 * run.analysis.record_log_likelihood_bound(), epsilon, n_draws
    )
    temperature, note = run.temperature(calibration, events_at, epsilon)
    run.charge(events_at(temperature), note)
    kwargs.update(tune=0, compute_convergence_checks=False)
    with warnings.catch_warnings():
        if per_chain == 1:  # ArviZ and PyMC warn about one-draw chains
            warnings.simplefilter("ignore", UserWarning)
        idata = run.private_step_trace(temperature, per_chain, kwargs)
    return keep_groups(idata, ("posterior",))


def _sample_converged_ops(run: _Run, draws, epsilon, kwargs):
    refuse_leaky_options(kwargs)
    chains, n_sweeps = _chains_and_sweeps(kwargs, draws)

    def describe(temperature: float) -> tuple[str, dict]:
        statistic = (
            f"last Gibbs draw of {chains} chain(s) at T = {temperature:.4g} after "
            f"{n_sweeps // chains} sweeps each; the guarantee assumes each chain converged"
        )
        worst_case = n_sweeps * run.analysis.sweep_weight() / temperature
        return statistic, {"assumes_convergence": True, "worst_case_epsilon": worst_case}

    events_at = _ops_events(run, chains, describe)
    calibration = calibrate_temperature(
        2 * run.analysis.record_log_likelihood_bound(), epsilon, chains
    )
    temperature, note = run.temperature(calibration, events_at, epsilon)
    run.charge(events_at(temperature), note)

    # PyMC's warnings and logs read every draw; only the last is released
    def sample() -> xr.DataTree:
        with warnings.catch_warnings(), quiet_unreleased():
            warnings.simplefilter("ignore")
            return last_draw(run.private_step_trace(temperature, draws, kwargs))

    return discard_on_error(sample)


def _sample_metropolis(run: _Run, draws, epsilon, delta, release, assume_rejection_bound, kwargs):
    """Private Metropolis (Foulds Theorem C.1) at T from the model's Δ; see the module doc.

    Every step of every chain counts, tuning included: n = chains × (tune + draws).

    * ``release="chain"``: every step is released. Each runs at ε_s = ε/n and T = 2Δ/ε_s and is
      (ε_s, δ/n)-DP **if** its rejection probability is at most δ/n for every dataset and
      state — an assumption that cannot be checked and that a random walk's own chain
      usually contradicts (it rejects far more often than δ/n). Offered only on explicit
      opt-in (``assume_rejection_bound=True``); the event carries the assumption in
      ``unverified_assumption`` (so it is not a guarantee); it is charged before the chain
      is sampled, so the released chain's own rejection rate goes to the trace
      (``sample_stats`` attributes ``rejection_rate`` and ``assumed_rejection_bound``), with
      a ``UserWarning`` when it exceeds the assumed bound.
    * ``release="last"``: the last draw of each chain at T = 2Δ/(ε/chains); if the chain has
      converged each is an exact tempered-posterior draw costing ε/chains with no δ. Flagged
      ``assumes_convergence``, with no ``worst_case_epsilon``: without convergence, Theorem C.1
      gives no pure-ε bound (rejections are covered only by a δ of n·Pr(reject)).
    """
    release = release or "last"
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    if "proposal_scale" not in kwargs:
        raise ValueError("mechanism='metropolis' needs a public, fixed proposal_scale")
    proposal_scale = validate_proposal_scale(kwargs.pop("proposal_scale"))
    chains, n_steps = _chains_and_sweeps(kwargs, draws)
    bound = run.analysis.record_log_likelihood_bound()
    if release == "chain":
        if not assume_rejection_bound:
            raise ValueError(
                "mechanism='metropolis' with release='chain' is (ε, δ)-DP only if every step "
                "rejects with probability at most δ/n for every dataset and state, which "
                "cannot be checked and which a random walk's own chain usually contradicts. "
                "Use release='last' (one posterior sample), mechanism='gibbs-exponential' to "
                "release every draw with a guarantee, or opt in with "
                "assume_rejection_bound=True to record an event that is not a guarantee. "
                "Nothing was sampled."
            )
        if not 0 < delta < 1:
            raise ValueError("release='chain' needs the declared δ in (0, 1) (Theorem C.1)")
        calibration = calibrate_temperature(2 * bound, epsilon, n_steps)
        cost = (calibration.epsilon, float(delta))
    else:
        if delta:
            raise ValueError("release='last' spends no δ (it assumes convergence): drop delta")
        refuse_leaky_options(kwargs)
        calibration = calibrate_temperature(2 * bound, epsilon, chains)
        cost = (calibration.epsilon, 0.0)
    temperature = calibration.temperature
    statistic = (
        f"{'all' if release == 'chain' else 'the last'} of {n_steps} Metropolis steps at "
        f"T = {temperature:.4g}, proposal sd {proposal_scale:g}"
    )
    assumption = ""
    rejection_bound = float(delta) / n_steps
    if release == "chain":
        assumption = (
            f"Pr(reject) <= {rejection_bound:.3g} at every step, for every dataset and state"
        )
        statistic += "; the released chain's rejection rate is in the trace (sample_stats)"
    else:
        statistic += "; no worst case without convergence (rejections need a δ)"
    event = run.event(
        "metropolis",
        epsilon=cost[0],
        delta=cost[1],
        temperature=temperature,
        compositions=n_steps if release == "chain" else chains,
        statistic=statistic,
        source=METROPOLIS_SOURCE,
        assumes_convergence=release == "last",
        unverified_assumption=assumption,
    )
    run.charge([event], "")
    tempered = temper(run.model, temperature, part=run.tempering)
    last = release == "last"  # PyMC's warnings and logs would read the unreleased steps

    def sample():
        with tempered, route_context(), warnings.catch_warnings():
            if last:
                warnings.simplefilter("ignore")
            with quiet_unreleased() if last else contextlib.nullcontext():
                step = PrivateMetropolis(proposal_scale=proposal_scale, noise_seed=run.noise_seed)
                idata = pm.sample(draws, step=step, **kwargs)
        return last_draw(idata) if last else idata

    if last:
        return discard_on_error(sample)
    trace = _without_lp(keep_groups(sample(), ("posterior", "sample_stats")))
    rate = _rejection_rate(trace)  # post-processing of the released chain
    trace["sample_stats"].attrs["rejection_rate"] = rate
    trace["sample_stats"].attrs["assumed_rejection_bound"] = rejection_bound
    if not rate <= rejection_bound:
        warnings.warn(
            f"the released chain rejected {rate:.3g} of its moves; the event assumes at most "
            f"{rejection_bound:.3g} at every step, so its (ε, δ) is not a guarantee for this run",
            UserWarning,
            stacklevel=4,
        )
    return trace


def _rejection_rate(idata: xr.DataTree) -> float:
    """Share of rejected moves in the released chain (post-processing of released draws)."""
    stats = idata["sample_stats"].to_dataset()
    if "accepted" not in stats:
        return float("nan")
    return float(1.0 - stats["accepted"].mean())
