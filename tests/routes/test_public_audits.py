"""Audits of the temperature ``pymc_dp.sample`` applies, on pairs where the loss reaches ε.

Issue 11: the older audits (:mod:`tests.routes.test_tempered_audit`) call the update functions
at a temperature the test computes, on symmetric pairs whose true loss is ε/2, with a T = 1
control; a route that halves its temperature passes them. Here every audit

1. runs ``pymc_dp.sample`` itself on both datasets of the pair, with a spy on the one function
   the route's private step calls (``tempered_draw`` for the tempered Gibbs step, ``sweep``
   for the HMM's step, the step object itself for Metropolis), so the temperature,
   statistics, tempering and proposal are the ones the route chose, and checks them against
   the ledger event the route recorded;
2. replays that exact call ``N`` times (vectorised: calling ``pymc_dp.sample`` 10⁵–10⁶ times
   would take hours; a chain of N exact draws through the route takes minutes for the
   Normal block) and bounds ε from below (Clopper–Pearson, :mod:`pymc_dp.audit`) on an event
   fixed in advance from the density ratio of the pair;
3. repeats 1–2 with the route's one calibration call (``calibrate_temperature`` in
   :mod:`pymc_dp.routes.tempered`, or in :mod:`pymc_dp.hmm.privacy` for the HMM's
   ``OPSCost``) patched to spend 2ε while reporting ε: the 2× control goes through the same
   public route, and the audit must catch it (bound > the requested ε). The HMM's OPS event
   takes its ε from the calibration, so its ledger still says ε; the tempered routes'
   events compute ε from the T they ran at, so their ledgers say 2ε. Every control here
   halves a temperature T >= 2, so its T/2 >= 1 is not capped (a true 2× error).

Why the pairs are asymmetric. For one exact tempered draw, with f(θ) = ℓ(x, θ) − ℓ(x', θ)
the log-likelihood difference of the replaced record (range [−Δ, Δ], Δ the route's bound),

    p_D(θ) / p_D'(θ) = e^{f(θ)/T} / E_{D'}[e^{f/T}].

On a symmetric pair (f odd around the posterior's centre) the denominator is ≈ 1 and the loss
is Δ/T = ε/2. It reaches 2Δ/T = ε only when D' puts its mass where f = −Δ while the event sits
where f = +Δ. A data-independent prior can do that (it is part of the mechanism's input, so
the guarantee must hold for it): ``tempering="likelihood"`` keeps it untempered. The numbers
below (predicted bound at the expected counts, the sampling-free event loss) are from 1-D
quadrature of the exact densities; measured bounds are recorded in each test.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_dp
import pymc_dp.hmm.privacy as hmm_privacy
import pymc_dp.routes.tempered as tempered_route
import pymc_dp.steps.hmm_gibbs as hmm_gibbs
import pymc_dp.steps.tempered_gibbs as tempered_gibbs
from pymc_dp import PrivacyLedger
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.distributions import TruncatedBeta, TruncatedDirichlet
from pymc_dp.families.bounds import (
    bernoulli_log_likelihood_bound,
    categorical_log_likelihood_bound,
    normal_log_likelihood_bound,
    poisson_log_likelihood_bound,
)
from pymc_dp.families.tempered import tempered_draw
from pymc_dp.hmm import cell_counts, log_likelihood_bound
from pymc_dp.hmm.gibbs import sweep, update_emission
from pymc_dp.models import naive_bayes_hmm

QUIET = {"progressbar": False}


def _spend_twice_epsilon(monkeypatch, route=tempered_route):
    """BROKEN on purpose: the route calibrates T for 2ε but its ledger event says ε.

    ``route`` is the module whose ``calibrate_temperature`` the route calls
    (:mod:`pymc_dp.hmm.privacy` for the HMM's ``OPSCost``)."""
    real = route.calibrate_temperature

    def broken(cost, epsilon, n_releases=1):
        doubled = real(cost, 2 * epsilon, n_releases)
        return dataclasses.replace(doubled, target_epsilon=epsilon, epsilon=doubled.epsilon / 2)

    monkeypatch.setattr(route, "calibrate_temperature", broken)


def _route_calls(monkeypatch, model, **options):
    """Run ``pymc_dp.sample`` once; return its only ledger event and the ``tempered_draw``
    calls its private step made (keyword arguments as the step passed them)."""
    calls = []

    def spy(kind, prior, statistics, temperature, bounds, rng, **kwargs):
        calls.append(
            {
                "kind": kind,
                "prior": prior,
                "statistics": np.array(statistics),
                "temperature": temperature,
                "bounds": bounds,
                **kwargs,
            }
        )
        return tempered_draw(kind, prior, statistics, temperature, bounds, rng, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(tempered_gibbs, "tempered_draw", spy)
        idata = pymc_dp.sample(model=model, noise_rng=np.random.default_rng(0), **QUIET, **options)
    (event,) = PrivacyLedger.from_datatree(idata).events
    return event, calls


def _replay(call, n_runs, rng):
    """The route's own call, ``n_runs`` independent times (exact blocks: one draw each).

    A Dirichlet block is updated from its current value (a Fang et al. kernel step): the
    call is replayed from the route's own ``current``, repeated ``n_runs`` times (one row
    per run; the rows are independent); the first component is returned."""
    if call["kind"] == "dirichlet":
        return tempered_draw(
            call["kind"],
            call["prior"],
            call["statistics"],
            call["temperature"],
            call["bounds"],
            rng,
            current=np.repeat(call["current"], n_runs, axis=0),
            part=call["part"],
        )[:, 0]
    prior = tuple(np.asarray(p)[0] for p in call["prior"])
    return tempered_draw(
        call["kind"],
        prior,
        call["statistics"],
        call["temperature"],
        call["bounds"],
        rng,
        size=(n_runs,),
        part=call["part"],
    )[:, 0]


def _exact_block_audit(monkeypatch, models, options, event, n_runs, seed):
    """Audit one exact draw of the route on the pair ``models``; returns (bound, T, ε claimed)."""
    outputs, temperatures, claimed = [], set(), set()
    rng = np.random.default_rng(seed)
    for model in models:
        ledger_event, calls = _route_calls(monkeypatch, model, **options)
        (call,) = calls  # one block, one sweep: the route released exactly this draw
        assert call["temperature"] == pytest.approx(ledger_event.temperature)
        temperatures.add(call["temperature"])
        claimed.add(ledger_event.epsilon)
        outputs.append(_replay(call, n_runs, rng))
    (temperature,), (epsilon,) = temperatures, claimed  # same T and claim on both datasets
    bound = epsilon_lower_bound(*outputs, event, vectorized=True)
    return bound, temperature, epsilon


# --- OPS on Beta–Bernoulli -------------------------------------------------------------------

BERNOULLI_EPSILON, BERNOULLI_A = 3.0, 0.01


def _bernoulli_model(outcome):
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 0.01, 0.5, BERNOULLI_A)
        pm.Bernoulli("y", p=rate, observed=np.array([outcome]))
    return model


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_ops_beta_bernoulli_audit_through_the_route(monkeypatch, broken):
    """One OPS draw (``release="last"``), records x = 1 (D) and x' = 0 (D').

    Derivation. Θ = [a, 1 − a], a = 0.01; f(θ) = log θ − log(1 − θ) = logit θ ∈ [−Δ, Δ] with
    Δ = log((1 − a)/a) = 4.595 (the route's bound, attained at both ends), T = 2Δ/ε = 3.06 at
    ε = 3. Under likelihood tempering D' ∝ π(θ)(1 − θ)^{1/T}; the prior Beta(0.01, 0.5) is
    flat in logit θ below its mode (≈ −Δ) and decays as e^{−0.5·logit θ} above it, so D' sits
    at the f = −Δ end with a thin tail to the other. A Beta likelihood cannot concentrate D'
    *at* the end (its density in logit θ never increases towards −Δ), so the best event loss
    is 0.61ε (control: 1.18ε), and the audit needs 10⁶ runs. Event θ > 0.9876 (the
    quadrature optimum of the control at 10⁶ runs): p0 = 0.0070, p1 = 0.0011 (route),
    p1 = 0.0003 (control). Predicted bounds at 10⁶: 1.73 (route), 3.38 (control);
    measured (seed 41) 1.72 (T = 3.06, ≈ 30 s) and 3.37 (T = 1.53, ≈ 15 s).
    """
    if broken:
        _spend_twice_epsilon(monkeypatch)
    models = (_bernoulli_model(1), _bernoulli_model(0))
    options = {"epsilon": BERNOULLI_EPSILON, "mechanism": "ops", "tempering": "likelihood"}
    bound, temperature, claimed = _exact_block_audit(
        monkeypatch, models, options, lambda theta: theta > 0.9876, 1_000_000, 41
    )
    delta = bernoulli_log_likelihood_bound(BERNOULLI_A)
    if broken:
        assert temperature == pytest.approx(delta / BERNOULLI_EPSILON)
        assert bound > BERNOULLI_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / BERNOULLI_EPSILON)
        assert claimed == pytest.approx(BERNOULLI_EPSILON)  # the ledger's ε is the one audited
        assert 0.4 * BERNOULLI_EPSILON < bound <= BERNOULLI_EPSILON


# --- OPS on a two-category truncated Dirichlet (Categorical records) -------------------------

DIRICHLET_EPSILON, DIRICHLET_A, DIRICHLET_ALPHA = 2.0, 0.1, (0.01, 2.0)


def _categorical_model(choice):
    with pm.Model() as model:  # distinct prior counts are private unless declared public
        alpha = pm.Data("prior_counts", np.array(DIRICHLET_ALPHA))
        shares = TruncatedDirichlet("shares", alpha, DIRICHLET_A)
        pm.Categorical("choice", p=shares, observed=np.array([choice]))
    return model


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_ops_dirichlet_categorical_audit_through_the_route(monkeypatch, broken):
    """One OPS draw (``release="last"``) of a K = 2 truncated Dirichlet, x = 0 (D), x' = 1 (D').

    Route. A Categorical record under a ``TruncatedDirichlet`` is a Dirichlet block; with
    K = 2 categories its Fang et al. kernel is one pair update of (θ_0, θ_1), whose total is 1,
    so the update is an exact truncated-Beta draw whatever the start: the route samples it as
    an exact block (``mechanism="ops"``, no convergence assumed) and the spy replays the call
    the step made (``tempered_draw(kind="dirichlet", current=...)``) from the route's start.
    (K >= 3: see below.)

    Derivation. Θ: θ_j ∈ [a0, 1 − a0], a0 = 0.1; f(θ) = log θ_0 − log θ_1 = logit θ_0 ∈
    [−Δ, Δ] with Δ = log 9 = 2.197 (``categorical_log_likelihood_bound(0.1, 2)``, attained at
    both ends); T = 2Δ/ε = 2.197 at ε = 2, control T = 1.099 (>= 1: not capped). Under
    likelihood tempering D' ∝ θ_0^{0.01 − 1}(1 − θ_0)^{2 − 1 + 1/T}: in logit θ_0 its density
    is ∝ θ_0^{0.01}(1 − θ_0)^{2.46}, flat below 0 and decaying above, so D' sits on the
    f < 0 side with a thin tail to θ_0 = 0.9 (f = +Δ). Event θ_0 > 0.86 (the quadrature
    optimum over α_1 and the threshold): p0 = 0.00687, p1 = 0.00178, event loss 1.35 = 0.67ε
    (route); p0 = 0.0111, p1 = 0.00079, 2.64 = 1.32ε (control). Predicted bounds at
    3·10⁵ runs: 1.20 (route), 2.46 (control); measured (seed 45) 1.16 (T = 2.197) and
    2.45 (T = 1.099), 30–50 s each on a loaded machine.

    K >= 3 is not audited here. The sweep (``mechanism="gibbs-exponential"``, K − 1 pair
    updates, charged (K − 1)·2Δ/T): pair update j moves (θ_j, θ_{K−1}) and sees the record only
    through those two, so its loss spans 2Δ/T only if {x, x'} = {j, K − 1}, else at most Δ/T;
    a sweep's loss is at most KΔ/T (x' = K − 1), at K = 3 3Δ/T = 0.75ε, and the 2× control's
    at most 1.5ε. An event captures ≈ 0.62–0.70 of one update's range (the quadrature
    searches for this audit), so the control would measure ≈ 1.0ε at best: not clearly above
    ε (the composition is loose by 2(K − 1)/K; the route is not wrong). The converged OPS
    draw (K >= 3 by MCMC, ``assumes_convergence``) would need every replayed row run for
    the route's whole chain: at 20–40 s per 10⁶ truncated-Beta draws here, minutes per audit.
    """
    if broken:
        _spend_twice_epsilon(monkeypatch)
    models = (_categorical_model(0), _categorical_model(1))
    options = {
        "epsilon": DIRICHLET_EPSILON,
        "mechanism": "ops",
        "tempering": "likelihood",
        "public": ["prior_counts"],
    }
    bound, temperature, claimed = _exact_block_audit(
        monkeypatch, models, options, lambda theta: theta > 0.86, 300_000, 45
    )
    delta = categorical_log_likelihood_bound(DIRICHLET_A, 2)
    assert delta == pytest.approx(math.log(9))
    if broken:
        assert temperature == pytest.approx(delta / DIRICHLET_EPSILON)
        assert bound > DIRICHLET_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / DIRICHLET_EPSILON)
        assert claimed == pytest.approx(DIRICHLET_EPSILON)  # the ledger's ε is the one audited
        assert 0.4 * DIRICHLET_EPSILON < bound <= DIRICHLET_EPSILON


# --- exponential-mechanism Gibbs on Poisson --------------------------------------------------

POISSON_EPSILON, POISSON_RATES, POISSON_MAX_COUNT = 2.0, (0.5, 4.0), 2


def _poisson_model(count):
    with pm.Model() as model:
        lam = pm.Truncated("lam", pm.Gamma.dist(0.01, 1.25), *POISSON_RATES)
        pm.Poisson("count", mu=lam, observed=np.array([count]))
    return model


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_gibbs_exponential_poisson_audit_through_the_route(monkeypatch, broken):
    """Every draw released (``tune=0``, one draw: one sweep), counts y = 2 (D), y' = 0 (D').

    Derivation. Counts in {0, 1, 2}, λ ∈ [0.5, 4]: f(λ) = 2·log λ − log 2! ∈ [−log 8, log 8].
    The route's Δ = max over the two ends of the range of y·log λ − log y! over y, = log 8 =
    2.079 at both (λ_lo·λ_hi = 2 = (2!)^{2/2} makes them equal, so the pair's range
    2·log(λ_hi/λ_lo) = 2·log 8 is exactly 2Δ; the −λ term cancels). One sweep of one block
    costs 2Δ/T, so T = 2Δ/ε = 2.079 at ε = 2, and the control's T = 1.040 >= 1 is not capped.
    Under likelihood tempering D' ∝ λ^{0.01 − 1}·e^{−(1.25 + 1/T)λ}: in log λ its density is
    ∝ λ^{0.01}·e^{−1.73λ}, decreasing from λ_lo, so the prior's *rate* piles D' up at
    λ_lo = 0.5, where f = −Δ (a Beta cannot do that), with a thin tail to λ_hi = 4. Event
    λ > 3.3 (the quadrature optimum of prior rate and threshold for the control at
    5·10⁵ runs): p0 = 0.00533, p1 = 0.00138, event loss 1.35 = 0.68ε (route); p0 = 0.00556,
    p1 = 0.000374, 2.70 = 1.35ε (control). Predicted bounds at 5·10⁵ runs: 1.22 (route),
    2.49 (control, sd ≈ 0.08); measured (seed 42) 1.17 (T = 2.079) and 2.51 (T = 1.040),
    25–60 s each.

    Why these bounds. At λ ∈ [0.2, 5], counts {0, 1}, ε = 2 (this audit's former setting:
    measured 1.195) T = 1.61 and the control's T = 0.80 is capped at 1 (a 1.6× error,
    measured 1.956 < 2). A control needs T >= 2, i.e. ε <= Δ. By quadrature (likelihood
    tempering, prior shape 0.01, best prior rate and event threshold, 10⁶ runs, ε = 0.9Δ,
    counts 0..M with λ_lo·λ_hi = (M!)^{2/M} so that the pair's range is 2Δ) the control's
    predicted bound is 1.12–1.36ε for λ_hi/λ_lo from 2 to 16 and M = 1, 2, 3 (1.04–1.25ε at
    M = 5), best at M = 2 and a ratio of 4 to 9; wider intervals lose it (M = 1, ε = Δ:
    1.05ε at [0.1, 10], 0.89ε at [0.05, 20], 0.74ε at [0.02, 50]). Joint tempering is never
    better (equal when the control runs at T = 1, below it otherwise: the prior's exponents
    shrink by 1/T).
    """
    if broken:
        _spend_twice_epsilon(monkeypatch)
    models = (_poisson_model(POISSON_MAX_COUNT), _poisson_model(0))
    options = {
        "draws": 1,
        "tune": 0,
        "epsilon": POISSON_EPSILON,
        "mechanism": "gibbs-exponential",
        "tempering": "likelihood",
        "data_bounds": {"count": (0, POISSON_MAX_COUNT)},
        "compute_convergence_checks": False,
    }
    bound, temperature, claimed = _exact_block_audit(
        monkeypatch, models, options, lambda lam: lam > 3.3, 500_000, 42
    )
    delta = poisson_log_likelihood_bound(POISSON_MAX_COUNT, *POISSON_RATES)
    assert delta == pytest.approx(math.log(8))
    if broken:
        assert temperature == pytest.approx(delta / POISSON_EPSILON)
        assert temperature >= 1  # a true 2× error, not capped
        assert bound > POISSON_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / POISSON_EPSILON)
        assert claimed == pytest.approx(POISSON_EPSILON)  # the ledger's ε is the one audited
        assert 0.4 * POISSON_EPSILON < bound <= POISSON_EPSILON


# --- exponential-mechanism Gibbs on Normal (known σ) -----------------------------------------

NORMAL_EPSILON = 2.0


def _normal_model(value):
    with pm.Model() as model:
        mu = pm.TruncatedNormal("mu", 10.0, 2.0, lower=-1.0, upper=1.0)
        pm.Normal("x", mu=mu, sigma=1.0, observed=np.array([value]))
    return model


@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_gibbs_exponential_normal_audit_through_the_route(monkeypatch, broken):
    """One sweep, records x = −1 (D) and x' = +1 (D'), data and mean bounds [−1, 1], σ = 1.

    Derivation. f(μ) = (−(−1 − μ)² + (1 − μ)²)/2 = −2μ ∈ [−2, 2] and the route's Δ = 2
    (``normal_log_likelihood_bound(-1, 1, -1, 1, 1)``), attained at both ends; T = 2Δ/ε = 2 at
    ε = 2 (control: T = 1). The prior N(10, 2²) truncated to [−1, 1] has density ∝ e^{≈2.5μ}:
    D' piles up at μ = 1, where f = −Δ, with an exponential tail to μ = −1, where f = +Δ: the
    event loss at μ < −0.7 is 1.56 = 0.78ε (control 3.06 = 1.53ε). Predicted bounds at
    50 000 runs: 1.15 (route), 2.45 (control); measured (seed 43) 1.18 and 2.56, ≈ 3 s each.
    The same audit on a chain of 50 000 draws released by the route itself (``draws=50_000``,
    ``epsilon=50_000·ε``, the same T) gave 1.08 in 230 s.
    """
    if broken:
        _spend_twice_epsilon(monkeypatch)
    models = (_normal_model(-1.0), _normal_model(1.0))
    options = {
        "draws": 1,
        "tune": 0,
        "epsilon": NORMAL_EPSILON,
        "mechanism": "gibbs-exponential",
        "tempering": "likelihood",
        "data_bounds": {"x": (-1.0, 1.0)},
        "compute_convergence_checks": False,
    }
    bound, temperature, claimed = _exact_block_audit(
        monkeypatch, models, options, lambda mu: mu < -0.7, 50_000, 43
    )
    delta = normal_log_likelihood_bound(-1.0, 1.0, -1.0, 1.0, 1.0)
    assert delta == pytest.approx(2.0)
    if broken:
        assert temperature == pytest.approx(delta / NORMAL_EPSILON)
        assert bound > NORMAL_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / NORMAL_EPSILON)
        assert claimed == pytest.approx(NORMAL_EPSILON)  # the ledger's ε is the one audited
        assert 0.4 * NORMAL_EPSILON < bound <= NORMAL_EPSILON


# --- private Metropolis ----------------------------------------------------------------------

METROPOLIS_EPSILON, METROPOLIS_A, METROPOLIS_START = 1.0, 0.05, 0.06


def _metropolis_model(outcome):
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, METROPOLIS_A)
        pm.Bernoulli("y", p=rate, observed=np.array([outcome]))
    return model


def _metropolis_audit(monkeypatch, n_runs, seed):
    """Run the route on both datasets, keep the step it built, replay its first step."""
    built = []

    class Spy(tempered_route.PrivateMetropolis):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)

    rng = np.random.default_rng(seed)
    outputs, temperatures = [], set()
    for outcome in (1, 0):
        with monkeypatch.context() as patch:
            patch.setattr(tempered_route, "PrivateMetropolis", Spy)
            idata = pymc_dp.sample(
                1,
                tune=0,
                model=_metropolis_model(outcome),
                epsilon=METROPOLIS_EPSILON,
                mechanism="metropolis",
                proposal_scale=5.0,
                initvals={"rate": METROPOLIS_START},
                random_seed=seed,
                noise_rng=rng,
                **QUIET,
            )
        (event,) = PrivacyLedger.from_datatree(idata).events
        temperatures.add(event.temperature)
        step = built.pop()
        start = {"rate_interval__": np.array(_interval(METROPOLIS_START))}
        values = np.array([step.step(start)[0]["rate_interval__"] for _ in range(n_runs)])
        outputs.append(METROPOLIS_A + (1 - 2 * METROPOLIS_A) * special.expit(values))
    (temperature,) = temperatures
    bound = epsilon_lower_bound(*outputs, lambda rate: rate > 0.943, vectorized=True)
    return bound, temperature, event.epsilon


def _interval(rate):
    return float(special.logit((rate - METROPOLIS_A) / (1 - 2 * METROPOLIS_A)))


@pytest.mark.integration
@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_metropolis_audit_through_the_route(monkeypatch, broken):
    """One step (``tune=0``, ``release="last"``) from rate = 0.06, x = 1 (D) vs x' = 0 (D').

    Derivation (Foulds Theorem C.1). From θ0 a proposal θ' is accepted with probability
    min(1, r) where log r_D − log r_D' = (f(θ') − f(θ0))/T, f = logit θ ∈ [−Δ, Δ],
    Δ = log 19, T = 2Δ/ε = 5.89 at ε = 1. Starting at θ0 = 0.06 (f ≈ −Δ; public ``initvals``)
    and looking at θ1 > 0.943 (f ≈ +Δ), where the flat prior's Jacobian ratio is ≤ 1 so neither
    acceptance is capped at 1, the accepted-density ratio is e^{0.95ε}; the event excludes the
    rejection atom at θ0, so no δ is needed. A proposal sd of 5 (unconstrained scale) reaches
    the event with probability ≈ 0.01. Predicted bounds at 50 000 runs: 0.70 (route), 1.54
    (control, T = 2.94); measured (seed 44) 0.74 and 1.49, 15–25 s each (a Python loop of
    steps of the step object the route built).
    """
    if broken:
        _spend_twice_epsilon(monkeypatch)
    bound, temperature, claimed = _metropolis_audit(monkeypatch, 50_000, 44)
    delta = bernoulli_log_likelihood_bound(METROPOLIS_A)
    if broken:
        assert temperature == pytest.approx(delta / METROPOLIS_EPSILON)
        assert bound > METROPOLIS_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / METROPOLIS_EPSILON)
        assert claimed == pytest.approx(METROPOLIS_EPSILON)  # the ledger's ε is the one audited
        assert 0.4 * METROPOLIS_EPSILON < bound <= METROPOLIS_EPSILON


# --- OPS of the naive-Bayes HMM ------------------------------------------------------------

HMM_EPSILON, HMM_TRUNCATION, HMM_BETA = 2.0, 5.0, 0.1


def _hmm_model(first):
    """K = 1 state, one cell, one binary feature x: records (first, b, b)."""
    records = np.array([[first], [1], [1]])
    counts = cell_counts(
        np.zeros(3, int),
        np.zeros(3, int),
        records,
        regions=["r"],
        times=["t"],
        features=["x"],
        categories=[["a", "b"]],
    )
    return naive_bayes_hmm(counts, 1, beta=HMM_BETA, truncation=HMM_TRUNCATION)


def _hmm_route_call(monkeypatch, model):
    """Run the HMM's OPS route once (one chain, one sweep); its event and the sweep it ran."""
    calls = []

    def spy(data, states, emission, transition, rng, **kwargs):
        calls.append({"data": data, "emission": np.array(emission), **kwargs})
        return sweep(data, states, emission, transition, rng, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(hmm_gibbs, "sweep", spy)
        idata = pymc_dp.sample(
            1,
            tune=0,
            chains=1,
            model=model,
            epsilon=HMM_EPSILON,
            mechanism="ops",
            noise_rng=np.random.default_rng(0),
            **QUIET,
        )
    (event,) = PrivacyLedger.from_datatree(idata).events
    (call,) = calls  # tune = 0, one draw: the released draw is this sweep's
    return event, call


def _hmm_replay(call, n_runs, rng):
    """The emission update of the route's sweep, ``n_runs`` independent times.

    With K = 1 the sweep's state draw is z = 0 and its transition update reads no data, so
    the released emission is the sweep's ``update_emission``. Replayed on ``n_runs`` copies of
    the route's cell, copy r in its own state r (as ``tests/hmm``'s audit), each row is drawn
    from the route's conditional (its counts, β, truncation and T) from the route's start.
    """
    data = call["data"]
    assert data.n_states == 1
    copies = dataclasses.replace(
        data, counts=np.repeat(data.counts, n_runs, axis=0), n_regions=n_runs, n_states=n_runs
    )
    states = np.arange(n_runs).reshape(n_runs, 1)
    current = np.repeat(call["emission"], n_runs, axis=0)
    return update_emission(copies, states, rng, call["temperature"], current=current)[:, 0, 0]


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["route", "2x-control"])
def test_hmm_ops_audit_through_the_route(monkeypatch, broken):
    """The HMM's OPS route (``mechanism="ops"``, ``tune=0``, one draw), naive Bayes (K = 1),
    one cell, one binary feature: records (a, b, b) (D) and (b, b, b) (D').

    Route. ``_sample_ops`` runs ``NaiveBayesHMMGibbs`` at T = 2Δ/ε (``OPSCost``) and keeps the
    last draw. With K = 1 the states are fixed and the transitions read no data; with K_d = 2
    the emission's truncated-Dirichlet kernel is one pair update of total 1: an exact draw of
    θ_a ~ Beta((n_a + β − 1)/T + 1, (n_b + β − 1)/T + 1) truncated to [a0, 1 − a0]. So the
    released draw *is* the converged OPS draw after one sweep, and its claim is exact.

    Derivation. M = 5: a0 = 1/(M·K_d) = 0.1, Δ = log((1 − a0)/a0) = log 9 = 2.197
    (``log_likelihood_bound``); f(θ) = log θ_a − log θ_b ∈ [−Δ, Δ], both ends attained;
    T = 2.197 at ε = 2, control T = 1.099 (>= 1: not capped). The HMM tempers prior and
    likelihood jointly; β = 0.1 and the two shared b records make D' ∝ θ_a^{−0.9/T}·
    θ_b^{2.1/T} (in logit θ_a ∝ θ_a^{0.59}(1 − θ_a)^{1.96}): most of its mass on the f < 0
    side, with a thin tail to θ_a = 0.9 (f = +Δ). Event θ_a > 0.83 (quadrature optimum over
    β, shared records, truncation and threshold): p0 = 0.0485, p1 = 0.0167, event loss
    1.06 = 0.53ε (route); p0 = 0.0256, p1 = 0.00226, 2.43 = 1.21ε (control: at T/2 the
    tempered prior and shared records concentrate D' further, so its loss is above twice the
    route's). Predicted bounds at 2·10⁵ runs: 1.00 (route), 2.29 (control, sd ≈ 0.05);
    measured (seed 46) 0.99 (T = 2.197; hit rates 0.0480, 0.0168) and 2.32
    (T = 1.099; 0.0253, 0.00217), 25–40 s each.
    """
    if broken:
        _spend_twice_epsilon(monkeypatch, hmm_privacy)
    rng = np.random.default_rng(46)
    outputs, temperatures, claimed = [], set(), set()
    for first in (0, 1):
        event, call = _hmm_route_call(monkeypatch, _hmm_model(first))
        assert event.mechanism == "ops" and event.assumes_convergence
        assert call["temperature"] == pytest.approx(event.temperature)
        temperatures.add(call["temperature"])
        claimed.add(event.epsilon)
        outputs.append(_hmm_replay(call, 200_000, rng))
    (temperature,), (epsilon,) = temperatures, claimed
    bound = epsilon_lower_bound(*outputs, lambda theta: theta > 0.83, vectorized=True)
    delta = log_likelihood_bound([2], [1 / (2 * HMM_TRUNCATION)])
    assert delta == pytest.approx(math.log(9))
    # the ledger's ε is computed from the temperature run (OPSCost.epsilon = 2Δ/T): the
    # route's is the ε audited, the control's is 2ε, what its temperature really spends
    assert epsilon == pytest.approx(2 * HMM_EPSILON if broken else HMM_EPSILON)
    if broken:
        assert temperature == pytest.approx(delta / HMM_EPSILON)
        assert bound > HMM_EPSILON
    else:
        assert temperature == pytest.approx(2 * delta / HMM_EPSILON)
        assert 0.4 * HMM_EPSILON < bound <= HMM_EPSILON
