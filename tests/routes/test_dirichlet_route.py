"""``pymc_dp.sample(mechanism="dirichlet-...")``: the Dirichlet posterior releases of
:mod:`pymc_dp.mechanisms.dirichlet` as a trace with its ledger (issue 12).

Closed forms (a release at huge ε is the exact posterior Dir(α + c); the trace's draws are
exact draws from Dir(α̃)), refusals that charge nothing, and an audit through the route: a spy
records the one release call ``pymc_dp.sample`` makes on each dataset of a pair, the test
checks it against the histogram, the prior and the ledger event, replays that exact call and
bounds ε from below, with a broken control (the sensitivity mistaken for a quarter of GS)
that the audit must catch.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp
import pymc_dp.mechanisms.dirichlet as dm
import pymc_dp.routes.dirichlet as dirichlet_route
from pymc_dp import (
    BudgetExceededError,
    InvalidPrivateDataError,
    NonPrivateModelError,
    PrivacyLedger,
)
from pymc_dp.audit import epsilon_lower_bound

QUIET = {"progressbar": False, "compute_convergence_checks": False}
MECHANISMS = ("dirichlet-lsdim", "dirichlet-lshist", "dirichlet-ehd", "dirichlet-ehds")
ALPHA = np.array([1.0, 2.0, 0.5])


PUBLIC = {"public": ["alpha"]}
"""A prior with distinct concentrations is an array: declared public, as pymc_dp asks."""


def categorical_model(records, alpha=ALPHA, **extra):
    with pm.Model(coords={"category": ["a", "b", "c"][: len(alpha)]}) as model:
        p = pm.Dirichlet("p", a=pm.Data("alpha", alpha), dims="category")
        pm.Deterministic("odds", p[0] / p[1])
        pm.Categorical("x", p=p, observed=records, **extra)
    return model


def records(n=30, seed=0, k=3):
    return np.random.default_rng(seed).integers(0, k, size=n)


def numpy_noise(seed=1):
    return {"noise_backend": "numpy", "noise_rng": np.random.default_rng(seed)}


# --- closed forms ---------------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_huge_epsilon_releases_the_exact_posterior_and_the_draws_are_exact(mechanism):
    """At ε = 10⁶ the exponential mechanisms return α + c (no other candidate has a chance)
    and the Laplace ones ⌊c_i + η_i⌋ with |η_i| ≈ 10⁻⁶, i.e. c_i or c_i − 1 (the note's floor,
    Algorithms 1–2), the last count n minus the others. The draws of p are independent draws
    of Dir(α̃): the mean of each component within 4 standard errors, its sd within 6 % (2000
    draws: the sd's own relative error is about 1/√(2·2000) = 1.6 %)."""
    x = records()
    counts = np.bincount(x, minlength=3)
    with categorical_model(x):
        trace = pymc_dp.sample(
            1000, epsilon=1e6, mechanism=mechanism, chains=2, random_seed=4, **PUBLIC, **QUIET
        )
    released = trace["released_statistics"]
    table = released["x"].values[0]
    if mechanism in ("dirichlet-ehd", "dirichlet-ehds"):
        np.testing.assert_array_equal(table, counts)
    else:
        assert set(counts[:-1] - table[:-1]) <= {0, 1}
        assert table[-1] == x.size - table[:-1].sum()
    assert released.attrs["mechanism"] == mechanism
    np.testing.assert_array_equal(released.attrs["alpha"], ALPHA)
    exact = stats.dirichlet(ALPHA + table)
    draws = trace.posterior["p"].values.reshape(-1, 3)
    se = np.sqrt(exact.var()) / math.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - exact.mean()) < 4 * se)
    np.testing.assert_allclose(draws.std(axis=0), np.sqrt(exact.var()), rtol=0.06)
    odds = trace.posterior["odds"].values.ravel()
    np.testing.assert_allclose(odds, draws[:, 0] / draws[:, 1], rtol=1e-6)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_trace_has_one_event_and_no_records(mechanism):
    x = records(seed=2)
    with categorical_model(x):
        trace = pymc_dp.sample(200, epsilon=0.7, mechanism=mechanism, chains=1, **PUBLIC, **QUIET)
    assert set(trace.children) == {
        "posterior",
        "sample_stats",
        "released_statistics",
        "privacy_ledger",
    }
    ledger = PrivacyLedger.from_datatree(trace)
    (event,) = ledger.events
    assert event.epsilon == pytest.approx(0.7)
    assert event.delta == 0.0
    assert event.neighbouring == "replace-one"
    assert event.variables == ("x", "p")
    expected = {
        "dirichlet-lsdim": ("laplace", 3.0),
        "dirichlet-lshist": ("laplace", 2.0),
        "dirichlet-ehd": ("dirichlet-ehd", dm.hellinger_global_sensitivity(ALPHA)),
        "dirichlet-ehds": ("dirichlet-ehds", dm.hellinger_global_sensitivity(ALPHA)),
    }[mechanism]
    assert (event.mechanism, event.sensitivity) == pytest.approx(expected)
    released = trace["released_statistics"]["x"].values
    assert released.shape == (1, 3) and np.all(released >= 0)


def test_lshist_releases_through_opendp_by_default_and_ehd_through_numpy():
    x = records(seed=3)
    backends = {}
    for mechanism in ("dirichlet-lshist", "dirichlet-ehd"):
        with categorical_model(x):
            trace = pymc_dp.sample(
                50, epsilon=1.0, mechanism=mechanism, chains=1, **PUBLIC, **QUIET
            )
        backends[mechanism] = PrivacyLedger.from_datatree(trace).events[0].noise_backend
    assert backends == {"dirichlet-lshist": "opendp", "dirichlet-ehd": "numpy"}


@pytest.mark.integration
def test_free_variables_that_read_no_record_are_sampled_by_pymc():
    x = records(seed=5)
    with categorical_model(x) as model:
        pm.Normal("unrelated", 3.0, 0.5)
    with model:
        trace = pymc_dp.sample(
            1000,
            epsilon=1.0,
            mechanism="dirichlet-ehd",
            chains=2,
            random_seed=1,
            **PUBLIC,
            **QUIET,
        )
    unrelated = trace.posterior["unrelated"].values.ravel()
    assert abs(unrelated.mean() - 3.0) < 4 * 0.5 / math.sqrt(200)  # NUTS: ESS >= 200 here


def test_a_callback_runs_after_the_release_is_charged():
    """Every draw is post-processing of the one release, so callbacks are allowed; they see
    the charged ledger."""
    seen = []
    ledger = PrivacyLedger()

    def callback(trace, draw):
        seen.append(len(ledger))

    with categorical_model(records(seed=6)):
        pymc_dp.sample(
            20,
            epsilon=1.0,
            mechanism="dirichlet-lshist",
            ledger=ledger,
            chains=1,
            tune=10,
            callback=callback,
            **PUBLIC,
            **QUIET,
        )
    assert seen and set(seen) == {1}


# --- refusals: nothing is charged -------------------------------------------------------------
def _refused(model, error, match, ledger=None, **options):
    ledger = ledger if ledger is not None else PrivacyLedger(budget=10.0)
    before = len(ledger)
    options.setdefault("mechanism", "dirichlet-ehd")
    options.setdefault("epsilon", 1.0)
    with model, pytest.raises(error, match=match):
        pymc_dp.sample(20, ledger=ledger, chains=1, **options, **QUIET)
    assert len(ledger) == before


def test_refuses_two_observed_variables():
    x = records()
    with pm.Model() as model:
        p = pm.Dirichlet("p", a=np.ones(3))
        pm.Categorical("x", p=p, observed=x)
        pm.Categorical("x2", p=p, observed=x[:5])
    _refused(model, NonPrivateModelError, "one Dirichlet-Categorical pair.*2 observed")


def test_refuses_grouped_probabilities():
    x, groups = records(), np.random.default_rng(0).integers(0, 2, size=30)
    with pm.Model() as model:
        p = pm.Dirichlet("p", a=np.ones(3), shape=(2, 3))
        pm.Categorical("x", p=p[groups], observed=x)
    _refused(model, NonPrivateModelError, "group labels")


def test_refuses_a_hyperprior_on_alpha():
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0, shape=3)
        p = pm.Dirichlet("p", a=a)
        pm.Categorical("x", p=p, observed=records())
    _refused(model, NonPrivateModelError, "constants")


def test_refuses_a_truncated_prior():
    from pymc_dp.distributions import TruncatedDirichlet

    with pm.Model() as model:
        p = TruncatedDirichlet("p", np.ones(2), 0.05)
        pm.Categorical("x", p=p, observed=records(k=2))
    _refused(model, NonPrivateModelError, "TruncatedDirichlet, which only the posterior-sampling")


def test_refuses_other_likelihoods():
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=records(k=2))
    _refused(model, NonPrivateModelError, "not a Categorical")


def test_refuses_a_deterministic_of_the_records():
    x = records()
    with categorical_model(x) as model:
        pm.Deterministic("leak", pm.math.sum(model["x"]))
    _refused(model, NonPrivateModelError, "leak", **PUBLIC)


def test_refuses_records_out_of_range_naming_the_variable_only():
    x = records()
    x[3] = 7
    ledger = PrivacyLedger()
    with categorical_model(x), pytest.raises(InvalidPrivateDataError, match="x") as raised:
        pymc_dp.sample(20, epsilon=1.0, mechanism="dirichlet-ehd", ledger=ledger, **PUBLIC, **QUIET)
    assert "7" not in str(raised.value)
    assert len(ledger) == 0


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"neighbouring": "add-remove-one"}, "replace-one"),
        ({"delta": 1e-6}, "spends no δ"),
        ({"release": "last"}, "release is not an option"),
        ({"tempering": "joint"}, "tempering is not an option"),
        ({"inference": "noise-aware"}, "inference"),
        ({"noise": "gaussian", "delta": 1e-6}, "gaussian"),
        ({"accounting": "tight", "delta": 1e-6}, "tight"),
        ({"data_bounds": {"x": (0, 2)}}, "data_bounds"),
        ({"epsilon": None}, "epsilon is required"),
        ({"mechanism": "dirichlet-ehdl"}, "mechanism must be one of"),
        ({"nuts": {"target_accept": 0.9}}, "nuts"),
    ],
)
def test_refuses_options_it_cannot_honour(options, match):
    _refused(categorical_model(records()), ValueError, match, **PUBLIC, **options)


def test_refuses_an_infeasible_candidate_set_before_charging():
    x = np.random.default_rng(0).integers(0, 5, size=400)
    with pm.Model() as model:
        p = pm.Dirichlet("p", a=np.ones(5))
        pm.Categorical("x", p=p, observed=x)
    _refused(model, ValueError, "candidate")


def test_budget_exceeded_releases_nothing():
    ledger = PrivacyLedger(budget=0.5)
    _refused(categorical_model(records()), BudgetExceededError, "budget", ledger=ledger, **PUBLIC)


def test_refuses_undeclared_concentrations():
    """Default deny: distinct concentrations in a container not declared public are private."""
    _refused(categorical_model(records()), NonPrivateModelError, "'p' reads")


# --- audit through the route ----------------------------------------------------------------
def _captured_call(monkeypatch, mechanism, x, alpha, epsilon):
    """Run ``pymc_dp.sample`` and return the one release call it made, checked against the
    histogram, the prior and the ledger event."""
    calls = []
    real = dm.DP_RELEASES[mechanism]

    def spy(counts, alpha_, **options):
        calls.append((np.array(counts), np.array(alpha_), dict(options)))
        return real(counts, alpha_, **options)

    monkeypatch.setitem(dirichlet_route.DP_RELEASES, mechanism, spy)
    with categorical_model(x, alpha=alpha):
        trace = pymc_dp.sample(
            20,
            epsilon=epsilon,
            mechanism=mechanism,
            chains=1,
            tune=10,
            **numpy_noise(),
            **PUBLIC,
            **QUIET,
        )
    monkeypatch.setitem(dirichlet_route.DP_RELEASES, mechanism, real)
    (call,) = calls
    counts, alpha_, options = call
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=alpha.size))
    np.testing.assert_array_equal(alpha_, alpha)
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert options["epsilon"] == event.epsilon == pytest.approx(epsilon)
    return counts, alpha_, options


def _replay(mechanism, counts, alpha, options, runs, seed):
    rng = np.random.default_rng(seed)
    fresh = {**options, "rng": rng}
    return np.array(
        [
            dm.DP_RELEASES[mechanism](counts, alpha, **{**fresh, "ledger": PrivacyLedger()})
            for _ in range(runs)
        ]
    )


def _quarter_sensitivity(monkeypatch):
    """BROKEN on purpose: the exponential mechanisms' sensitivity is taken as GS/4, so the
    exponent is 4× what ε allows (the event still says ε)."""
    real = dm._ehd_sensitivity
    monkeypatch.setattr(dm, "_ehd_sensitivity", lambda alpha: real(alpha) / 4.0)


@pytest.mark.integration
@pytest.mark.parametrize("broken", [False, True])
def test_ehd_audit_through_the_route(monkeypatch, broken):
    """n = 1, k = 2, uniform prior: EHD is randomized response between Beta(2, 1) and
    Beta(1, 2) with exact loss ε/2 (the note's GS is attained). Event {α̃ = (2, 1)}. ε = 2,
    1500 runs per side: the route's bound is in (ε/4, ε/2]; the control's loss is 2ε and its
    bound exceeds ε."""
    epsilon, alpha = 2.0, np.ones(2)
    if broken:
        _quarter_sensitivity(monkeypatch)
    outputs = []
    for side, x in enumerate((np.array([0]), np.array([1]))):
        counts, alpha_, options = _captured_call(monkeypatch, "dirichlet-ehd", x, alpha, epsilon)
        outputs.append(_replay("dirichlet-ehd", counts, alpha_, options, 1500, 40 + side))
    bound = epsilon_lower_bound(
        outputs[0], outputs[1], lambda out: out[:, 0] == 2.0, alpha=0.05, vectorized=True
    )
    if broken:
        assert bound > epsilon
    else:
        assert epsilon / 4 < bound <= epsilon / 2


@pytest.mark.integration
@pytest.mark.parametrize("broken", [False, True])
def test_lshist_audit_through_the_route(monkeypatch, broken):
    """k = 3, scale 2/ε: D0 has counts (4, 5, 3), D1 moves one record from category 1 to 0.
    The event {c̃0 ≥ 5 + 1... } = {α̃0 − α0 ≥ c0 + 1, α̃1 − α1 ≤ c1 − 2} has loss exactly ε
    (test_dirichlet_mechanisms). Control: LSHist's scale sensitivity halved (2ε spent); 2000
    runs per side certify about half of ε for the route and more than ε for the control."""
    epsilon, alpha = 1.0, np.ones(3)
    if broken:
        monkeypatch.setattr(dm, "lshist_scale_sensitivity", lambda k: 1)
    d0 = np.repeat([0, 1, 2], [4, 5, 3])
    d1 = np.repeat([0, 1, 2], [5, 4, 3])
    outputs = []
    for side, x in enumerate((d0, d1)):
        counts, alpha_, options = _captured_call(monkeypatch, "dirichlet-lshist", x, alpha, epsilon)
        outputs.append(_replay("dirichlet-lshist", counts, alpha_, options, 2000, 50 + side))

    def event(out):
        return (out[:, 0] - 1 >= 4 + 1) & (out[:, 1] - 1 <= 5 - 2)

    bound = epsilon_lower_bound(outputs[0], outputs[1], event, alpha=0.05, vectorized=True)
    if broken:
        assert bound > epsilon
    else:
        assert 0.4 * epsilon < bound <= epsilon


@pytest.mark.parametrize("mechanism", ["dirichlet-ehd", "dirichlet-ehds"])
@pytest.mark.parametrize("alpha", [(10**3.25, 10**10.75), (1e8, 1e8)])
def test_concentrations_beyond_float64_precision_are_refused_before_charging(mechanism, alpha):
    """At α = (10^3.25, 10^10.75), n = 2 the float64 Hellinger distances broke EHDS's bound
    (computed privacy loss 8ε, exact 0.32ε; found by the adversarial review); at (1e8, 1e8) the
    smooth sensitivity rounded to 0. Both are refused by name before anything is charged."""
    x = np.array([0, 0])
    _refused(
        categorical_model(x, alpha=np.array(alpha)),
        ValueError,
        r"max\(alpha\) \+ n must be at most",
        mechanism=mechanism,
        **PUBLIC,
    )
    counts, prior = [2, 0], np.array(alpha)
    for release in (dm.release_ehd, dm.release_ehds):
        ledger = PrivacyLedger()
        with pytest.raises(ValueError, match="max"):
            release(counts, prior, epsilon=1.0, ledger=ledger)
        assert len(ledger) == 0
