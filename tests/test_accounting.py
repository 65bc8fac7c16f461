"""Tight composition: PrivacyLedger.epsilon_at and budgets checked against it.

The issue's figures (dp-accounting 0.6, δ = 1e-6): 100 Laplace releases at ε = 1 compose to
71.5 (PLD) and 73.8 (RDP) against 100 basic; at ε = 0.1 to 4.69 and 4.98 against 10. Closed
forms of Kairouz, Oh & Viswanath (2015) Thm 3.3 and 3.5 and of Dong, Durfee & Rogers (2020)
Prop. 4; monotone in δ; never above basic; partitions; default deny; budget boundaries.

Tolerances. The PLD figure is pessimistic on a grid of interval h = ε/100 here: it is an upper
bound on the exact PLD figure, at most k·h above it. Against dp-accounting's own accountant at
its default h = 1e-4 it differs by 4e-4 (ε = 1, k = 100) and 3e-6 (ε = 0.1); the tests allow
1e-3 and 1e-4. RDP is the same computation as dp-accounting's (relative 1e-12). The closed
forms are computed here independently and must match to 1e-9 (bisection of Thm 3.3) or
1e-12.
"""

from __future__ import annotations

import itertools
import json
import math

import dp_accounting
import numpy as np
import pytest
import xarray as xr
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.rdp import RdpAccountant
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_dp import BudgetExceededError, PrivacyEvent, PrivacyLedger, PrivacySession
from pymc_dp.accounting import DEFAULT_DELTA, METHODS, Composition, epsilon_at

DELTA = 1e-6


def laplace(epsilon, sensitivity=1.0, *, scale=None, **fields):
    """A Laplace release as release_laplace records it (scale b = Δ/ε)."""
    base = {
        "mechanism": "laplace",
        "epsilon": epsilon,
        "delta": 0.0,
        "sensitivity": sensitivity,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "noise_backend": "opendp",
        "noise_scale": sensitivity / epsilon if scale is None else scale,
        "time": "2024-01-01T00:00:00+00:00",
    }
    return PrivacyEvent(**{**base, **fields})


def gibbs(epsilon, sweeps=1, bound=0.5, *, mechanism="gibbs-exponential", **fields):
    """Exponential-mechanism releases at T: ``sweeps`` releases of 2Δ/T each, ε in total."""
    base = {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": 0.0,
        "sensitivity": bound,
        "neighbouring": "replace-one",
        "variables": ("p",),
        "noise_backend": "numpy",
        "temperature": 2 * bound * sweeps / epsilon,
        "compositions": sweeps,
        "time": "2024-01-01T00:00:00+00:00",
    }
    return PrivacyEvent(**{**base, **fields})


def metropolis(epsilon, delta, steps=1, bound=0.5):
    return gibbs(epsilon, steps, bound, mechanism="metropolis", delta=delta)


def unknown(epsilon, delta=0.0, **fields):
    return laplace(epsilon, mechanism="gaussian", noise_scale=None, delta=delta, **fields)


def tight(events, delta=DELTA) -> Composition:
    return PrivacyLedger(events=events).epsilon_at(delta)


# --- the issue's figures ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("epsilon", "pld_figure", "rdp_figure", "pld_tolerance"),
    [(1.0, 71.5, 73.8, 1e-3), (0.1, 4.69, 4.98, 1e-4)],
)
def test_100_laplace_releases_compose_to_the_issues_figures(
    epsilon, pld_figure, rdp_figure, pld_tolerance
):
    result = tight([laplace(epsilon)] * 100)
    assert result.per_method["basic"] == pytest.approx(100 * epsilon)
    assert result.per_method["pld"] == pytest.approx(pld_figure, abs=0.005 * 100 * epsilon)
    assert result.per_method["rdp"] == pytest.approx(rdp_figure, abs=0.005 * 100 * epsilon)
    assert (result.method, result.epsilon) == ("pld", result.per_method["pld"])
    assert result.basic_only == () and result.guaranteed
    # dp-accounting's own accountants on LaplaceDpEvent(noise_multiplier = b/Δ)
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=1 / epsilon)
    reference = dp_accounting.pld.PLDAccountant().compose(event, 100).get_epsilon(DELTA)
    assert result.per_method["pld"] == pytest.approx(reference, abs=pld_tolerance)
    rdp = RdpAccountant().compose(event, 100).get_epsilon(DELTA)
    assert result.per_method["rdp"] == pytest.approx(rdp, rel=1e-12)


def test_the_laplace_figure_uses_the_recorded_scale_over_sensitivity():
    """Δ = 4 with b = 4 is Laplace(1) on a unit shift; OpenDP's nudged-up scale is accepted."""
    assert tight([laplace(1.0, 4.0)] * 100).epsilon == pytest.approx(
        tight([laplace(1.0)] * 100).epsilon, rel=1e-12
    )
    nudged = laplace(1.0, scale=1.0 * (1 + 2.0**-40))
    assert tight([nudged] * 100).basic_only == ()


# --- closed forms -----------------------------------------------------------------------------
def kov_delta_i(k: int, epsilon0: float, i: int) -> float:
    """Kairouz, Oh & Viswanath 2015, Thm 3.3: δ_i of k-fold composition, exactly."""
    return (
        sum(
            math.comb(k, ell)
            * (math.exp((k - ell) * epsilon0) - math.exp((k - 2 * i + ell) * epsilon0))
            for ell in range(i)
        )
        / (1 + math.exp(epsilon0)) ** k
    )


@pytest.mark.parametrize("i", [1, 2, 3, 4])
def test_advanced_composition_is_kairouz_theorem_3_3_for_equal_releases(i):
    k, epsilon0 = 10, 0.5
    delta_i = kov_delta_i(k, epsilon0, i)
    # ten exponential-mechanism releases, as ten events and as one event of ten releases
    for events in ([gibbs(epsilon0)] * k, [gibbs(k * epsilon0, k)]):
        assert tight(events, delta_i).per_method["advanced"] == pytest.approx(
            (k - 2 * i) * epsilon0, abs=1e-9
        )
    # with a δ₀ per release: 1 − (1 − δ₀)^k (1 − δ_i)
    delta0 = 1e-4
    total_delta = 1 - (1 - delta0) ** k * (1 - delta_i)
    result = tight([metropolis(epsilon0, delta0)] * k, total_delta)
    assert result.per_method["advanced"] == pytest.approx((k - 2 * i) * epsilon0, abs=1e-9)
    # the dominating pair of dp-accounting gives the same optimum (its grid: 1e-4 per release)
    worst = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon0, 0.0), 5e-3)
    assert worst.self_compose(k).get_epsilon_for_delta(delta_i) == pytest.approx(
        (k - 2 * i) * epsilon0, abs=1e-3
    )


def test_advanced_composition_is_kairouz_theorem_3_5_for_unequal_releases():
    epsilons, delta = [0.1] * 30 + [0.05] * 40, 1e-5
    for release_delta in (0.0, 1e-7):
        events = [metropolis(e, release_delta) for e in epsilons]
        slack = 1 - (1 - delta) / (1 - release_delta) ** len(epsilons)  # δ̃
        mean = sum(e * (math.exp(e) - 1) / (math.exp(e) + 1) for e in epsilons)
        squares = sum(e * e for e in epsilons)
        expected = min(
            sum(epsilons),
            mean + math.sqrt(2 * squares * math.log(math.e + math.sqrt(squares) / slack)),
            mean + math.sqrt(2 * squares * math.log(1 / slack)),
        )
        assert tight(events, delta).per_method["advanced"] == pytest.approx(expected, rel=1e-9)


def br_mean(epsilon):
    x = epsilon / (1 - math.exp(-epsilon))
    return x - 1 - math.log(x)


def test_bounded_range_is_dong_durfee_rogers_proposition_4():
    # one Gibbs chain: 12,000 sweeps (tuning included) at one T, ε = 1 in total
    sweeps, delta = 12_000, 1e-6
    result = tight([gibbs(1.0, sweeps)], delta)
    e = 1.0 / sweeps
    expected = sweeps * e * e / 8 + math.sqrt(0.5 * sweeps * e * e * math.log(1 / delta))
    assert result.per_method["bounded-range"] == pytest.approx(expected, rel=1e-9)
    assert (result.method, round(result.epsilon, 4)) == ("bounded-range", 0.024)
    assert result.per_method["advanced"] == pytest.approx(0.0305, abs=1e-4)  # Thm 3.3
    # m(ε) at ε = 1, and the Σε cap
    two = tight([gibbs(1.0), gibbs(1.0)], 0.5)
    assert two.per_method["bounded-range"] == pytest.approx(
        2 * br_mean(1.0) + math.sqrt(0.5 * 2 * math.log(2)), rel=1e-9
    )
    assert tight([gibbs(1.0)], delta).per_method["bounded-range"] == 1.0
    # pure-DP events join the Azuma sum with mean ε tanh(ε/2) and range 2ε ...
    mixed = tight([gibbs(1.0, sweeps), *[laplace(0.001)] * 100], delta)
    mean = sweeps * e * e / 8 + 100 * 0.001 * math.tanh(0.0005)
    squares = sweeps * e * e + 100 * 4 * 0.001**2
    assert mixed.per_method["bounded-range"] == pytest.approx(
        mean + math.sqrt(0.5 * squares * math.log(1 / delta)), rel=1e-9
    )
    # ... or are left to basic composition when that is smaller (here 0.01 + 0.0240)
    split = tight([gibbs(1.0, sweeps), laplace(0.01)], delta)
    assert split.per_method["bounded-range"] == pytest.approx(0.01 + expected, rel=1e-9)
    assert split.per_method["advanced"] == pytest.approx(
        0.01 + result.per_method["advanced"], rel=1e-9
    )


# --- properties -------------------------------------------------------------------------------
def mixed_ledger():
    return [
        *[laplace(0.3)] * 20,
        gibbs(0.5, 1000),
        unknown(0.2),
        laplace(0.4, partition="region"),
        laplace(0.2, partition="region"),
        gibbs(0.3, 10, partition="week"),
        laplace(0.3, partition="week"),
    ]


def test_every_accounting_is_monotone_in_delta():
    events = mixed_ledger()
    deltas = [0.0, *np.logspace(-12, -2, 11)]
    results = [tight(events, d) for d in deltas]
    assert results[0].per_method == {"basic": results[0].epsilon}  # δ = 0: pure DP only
    for before, after in itertools.pairwise(results):
        assert after.epsilon <= before.epsilon + 1e-12
        for method, value in after.per_method.items():
            assert value <= before.per_method.get(method, math.inf) + 1e-12


EVENTS = st.one_of(
    st.builds(laplace, st.floats(1e-3, 3.0), st.floats(0.5, 4.0)),
    st.builds(gibbs, st.floats(1e-3, 3.0), st.integers(1, 2000)),
    st.builds(metropolis, st.floats(1e-3, 3.0), st.sampled_from([0.0, 1e-9, 1e-7])),
    st.builds(unknown, st.floats(1e-3, 3.0)),
)


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(
        st.tuples(EVENTS, st.sampled_from(["", "", "", "a", "b"])), min_size=1, max_size=12
    ),
    delta=st.sampled_from([1e-9, 1e-6, 1e-3]),
)
@pytest.mark.integration
def test_tight_total_is_at_most_basic_and_at_least_the_largest_event(events, delta):
    events = [
        PrivacyEvent.from_dict({**e.to_dict(), "partition": p, "compositions": e.compositions})
        for e, p in events
    ]
    result = tight(events, delta)
    basic_eps, basic_delta = result.basic_epsilon, result.basic_delta
    assert result.per_method["basic"] == (basic_eps if basic_delta <= delta else math.inf)
    assert result.epsilon <= result.per_method["basic"]
    assert result.epsilon == min(result.per_method.values())
    # one release of (ε_i, δ_i) is not (ε', δ)-DP for ε' < ε_i − 3δ in the worst case of its
    # class; an event of k releases is ε_i/k per release
    if result.epsilon < math.inf:
        assert result.epsilon >= max(e.epsilon / e.compositions for e in events) - 3 * delta
    # declaring partitions never costs more than composing every event in sequence
    in_sequence = [PrivacyEvent.from_dict({**e.to_dict(), "partition": ""}) for e in events]
    sequential = tight(in_sequence, delta)
    assert result.epsilon <= sequential.epsilon * (1 + 1e-3) + 1e-12


# --- partitions -------------------------------------------------------------------------------
def assert_same_figures(result, expected):
    assert result.per_method.keys() == expected.per_method.keys()
    for method in result.per_method:
        assert result.per_method[method] == pytest.approx(expected.per_method[method], rel=1e-9)


def test_a_partition_costs_its_largest_release_under_every_accounting():
    rest = [laplace(0.1)] * 100
    alike = [laplace(1.0, partition="region")] * 50
    assert_same_figures(tight(alike + rest), tight([laplace(1.0), *rest]))
    # unequal Laplace releases: the smallest b/Δ (here also the largest ε) dominates
    unequal = [laplace(e, partition="region") for e in (0.25, 1.0, 0.5)]
    assert_same_figures(tight(unequal + rest), tight([laplace(1.0), *rest]))
    # two Gibbs chains on disjoint parts cost one chain, tightly
    chains = [gibbs(1.0, 12_000, partition="site")] * 2
    assert_same_figures(tight(chains), tight([gibbs(1.0, 12_000)]))
    assert tight(chains).epsilon == pytest.approx(0.024, abs=1e-4)


def test_a_partition_mixing_mechanisms_is_dominated_and_never_worse_than_in_sequence():
    rest = [laplace(0.1)] * 100
    mixed = [laplace(1.0, partition="region"), gibbs(0.8, 1000, partition="region")]
    result = tight(mixed + rest)
    sequence = tight([laplace(1.0), gibbs(0.8, 1000), *rest])
    for method, value in result.per_method.items():
        assert value <= sequence.per_method[method] + 1e-12
    assert result.epsilon >= tight([laplace(1.0), *rest]).epsilon - 1e-3
    # the representative is a (max ε)-DP release for advanced composition
    assert result.per_method["advanced"] == pytest.approx(
        tight([gibbs(1.0)] + [gibbs(0.1)] * 100).per_method["advanced"], rel=1e-12
    )


def test_an_unidentified_event_in_a_partition_adds_the_partitions_largest_epsilon():
    rest = [laplace(0.1)] * 100
    result = tight([unknown(0.7, partition="region"), laplace(0.5, partition="region"), *rest])
    alone = tight(rest)
    assert result.basic_only == (0,)
    for method in ("advanced", "pld", "rdp"):
        assert result.per_method[method] == pytest.approx(alone.per_method[method] + 0.7)


# --- default deny -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "event",
    [
        unknown(1.0),  # a mechanism pymc_dp does not know
        laplace(1.0, noise_scale=None),  # no scale recorded
        laplace(1.0, scale=0.5),  # Δ/b = 2 > ε: the noise does not cover the claim
        laplace(1.0, delta=1e-7),  # Laplace spends no δ
        gibbs(1.0, temperature=None),  # no temperature
        gibbs(1.0, temperature=0.5),  # T < 1: a sharpened posterior is not calibrated
        gibbs(1.0, 100, temperature=10.0),  # ε/k = 0.01 < 2Δ/T = 0.1: k overstated
        gibbs(1.0, noise_scale=1.0),  # posterior sampling has no noise scale
        gibbs(1.0, delta=1e-7),
        gibbs(1.0, 2, mechanism="gibbs_posterior", delta=1e-7),  # one draw only
    ],
)
def test_events_that_cannot_be_identified_are_accounted_by_basic_composition(event):
    rest = [laplace(0.1)] * 100
    result = tight([event, *rest], 1e-5)
    alone = tight(rest, 1e-5 - event.delta)  # its δ is spent first
    assert result.basic_only == (0,)
    for method in ("advanced", "pld", "rdp"):
        assert result.per_method[method] == pytest.approx(
            alone.per_method[method] + event.epsilon, rel=1e-12
        )
    assert "bounded-range" not in result.per_method  # no identified exponential mechanism


def test_a_ledger_of_unidentified_events_is_its_basic_total():
    events = [unknown(0.01)] * 100 + [laplace(0.01, noise_scale=None)] * 100
    result = tight(events)
    assert result.per_method == {"basic": 2.0} and result.method == "basic"
    assert result.basic_only == tuple(range(200))
    assert epsilon_at(events, DELTA) is result  # cached: one computation per ledger state


def test_mixed_neighbouring_relations_are_accounted_by_basic_composition():
    events = [laplace(0.1)] * 50 + [laplace(0.1, neighbouring="add-remove-one")] * 50
    result = tight(events)
    assert result.per_method == {"basic": pytest.approx(10.0)}
    assert "neighbouring relations" in result.notes[0]


def test_caveats_are_carried_into_the_result():
    numpy_noise = laplace(1.0, noise_backend="numpy", unverified_assumption="secret seed")
    converged = gibbs(0.5, mechanism="ops", assumes_convergence=True)
    result = tight([numpy_noise, converged, numpy_noise])
    assert result.basic_only == ()  # still accounted tightly, but not a guarantee
    assert result.unverified_assumptions == ("secret seed",) and not result.guaranteed
    assert result.assumes_convergence
    assert tight([laplace(1.0)]).guaranteed and not tight([laplace(1.0)]).assumes_convergence


def test_invalid_inputs_are_refused():
    for bad in (-1e-9, 1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="delta"):
            PrivacyLedger().epsilon_at(bad)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="compositions"):
            gibbs(1.0, compositions=bad)
    assert PrivacyLedger().epsilon_at(DELTA).epsilon == 0.0


# --- budgets ----------------------------------------------------------------------------------
def test_a_budget_with_delta_accepts_what_the_tight_total_fits_and_no_more():
    events = [laplace(1.0) for _ in range(100)]
    figure = tight(events).epsilon  # 71.546
    exact = PrivacyLedger(budget=(figure, DELTA), events=events[:-1], tight_budget=True)
    exact.charge(events[-1])  # at the boundary: accepted, though basic says 100
    assert exact.epsilon == 100.0 and exact.remaining()[0] == pytest.approx(0.0, abs=1e-9)
    below = PrivacyLedger(
        budget=(figure * (1 - 1e-6), DELTA), events=events[:-1], tight_budget=True
    )
    with pytest.raises(BudgetExceededError, match=r"by pld composition.*nothing was released"):
        below.charge(events[-1])
    assert len(below) == 99
    # a pure budget is basic composition only
    pure = PrivacyLedger(budget=80.0)
    for event in events[:80]:
        pure.charge(event)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        pure.charge(events[80])


def test_a_bare_cost_is_added_by_basic_composition_an_event_by_its_mechanism():
    ledger = PrivacyLedger(  # tight: 4.693
        budget=(5.0, DELTA), events=[laplace(0.1)] * 100, tight_budget=True
    )
    assert ledger.remaining()[0] == pytest.approx(5.0 - tight([laplace(0.1)] * 100).epsilon)
    ledger.check(0.30)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        ledger.check(0.32)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        ledger.check_all([(0.16, 0.0), (0.16, 0.0)])
    ledger.charge(laplace(0.32))  # composed with the others: 4.897
    assert ledger.epsilon_at(DELTA).epsilon == pytest.approx(4.8965, abs=1e-3)


def test_a_budget_is_never_met_by_deltas_beyond_it():
    ledger = PrivacyLedger(
        budget=(100.0, 1e-6), events=[metropolis(0.01, 4e-7)] * 2, tight_budget=True
    )
    with pytest.raises(BudgetExceededError, match=r"release of"):
        ledger.charge(metropolis(0.01, 4e-7))


def test_budgets_are_basic_unless_tight_is_asked_for_and_sessions_always_are(tmp_path):
    # A budget checked release by release is a privacy filter: basic composition is valid for
    # it whatever the choices; PLD is not in general (Rogers et al. 2016). Default: basic.
    events = [laplace(1.0) for _ in range(100)]
    ledger = PrivacyLedger(budget=(75.0, DELTA), events=events[:75])
    with pytest.raises(BudgetExceededError, match=r"release of"):
        ledger.charge(events[75])
    assert ledger.remaining()[0] == pytest.approx(0.0)
    assert ledger.copy().tight_budget is False
    tight_ledger = PrivacyLedger(budget=(75.0, DELTA), events=events, tight_budget=True)
    assert tight_ledger.copy().tight_budget is True and len(tight_ledger) == 100
    path = tmp_path / "s.ledger"
    session = PrivacySession(path, "ds", budget=(75.0, DELTA))
    for _ in range(75):
        session.charge(laplace(1.0))
    # basic: 76 > 75, though PLD would say 57
    with pytest.raises(BudgetExceededError, match=r"release of"):
        session.charge(laplace(1.0))
    reopened = PrivacySession(path, "ds", (75.0, DELTA))
    assert reopened.epsilon == 75.0
    assert json.loads(reopened.to_json())["tight"]["method"] == "pld"


# --- the trace's ledger ----------------------------------------------------------------------
def test_the_trace_reports_the_tight_total_beside_the_basic_one(tmp_path):
    events = [laplace(1.0)] * 100
    no_budget = json.loads(PrivacyLedger(events=events).to_json())
    assert no_budget["epsilon"] == 100.0 and no_budget["tight"]["delta"] == DEFAULT_DELTA
    assert no_budget["tight"]["epsilon"] == pytest.approx(71.546, abs=1e-3)
    assert no_budget["tight"]["per_method"]["rdp"] == pytest.approx(73.818, abs=1e-3)
    budgeted = PrivacyLedger(budget=(80.0, 1e-9), events=events, tight_budget=True)
    dataset = budgeted.to_dataset()
    assert dataset.attrs["total_epsilon"] == 100.0
    assert dataset.attrs["tight_delta"] == 1e-9 and dataset.attrs["tight_method"] == "pld"
    assert dataset.attrs["tight_epsilon"] == budgeted.epsilon_at(1e-9).epsilon
    path = tmp_path / "ledger.nc"
    dataset.to_netcdf(path, engine="h5netcdf")
    with xr.open_dataset(path, engine="h5netcdf") as loaded:
        assert loaded.attrs["tight_epsilon"] == dataset.attrs["tight_epsilon"]
        assert PrivacyLedger.from_dataset(loaded).events == budgeted.events
    # a pure budget reports at δ = 0: the basic total
    pure = json.loads(PrivacyLedger(budget=200.0, events=events).to_json())["tight"]
    assert (pure["delta"], pure["epsilon"], pure["method"]) == (0.0, 100.0, "basic")


def test_compositions_round_trip_and_single_releases_serialise_as_before():
    chain = gibbs(1.0, 12_000)
    assert PrivacyEvent.from_dict(json.loads(json.dumps(chain.to_dict()))) == chain
    single = laplace(1.0)
    assert "compositions" not in single.to_dict()
    assert PrivacyEvent.from_dict(single.to_dict()).compositions == 1
    ledger = PrivacyLedger(events=[chain, single])
    assert PrivacyLedger.from_json(ledger.to_json()).events == ledger.events
    assert ledger.to_dataset()["compositions"].values.tolist() == [12_000, 1]
    assert set(METHODS) >= set(ledger.epsilon_at(DELTA).per_method)


def test_large_releases_compose_without_overflow_to_at_most_basic():
    # For ε₀ ≥ 20 Theorem 3.3's δ rounds to 1 in floating point (it crashed log1p): the
    # bisection then finds nothing below kε₀, the basic figure, which is valid.
    from pymc_dp.accounting import _kov_homogeneous

    for epsilon0, k in [(20.0, 3), (50.0, 1), (300.0, 10)]:
        assert _kov_homogeneous(epsilon0, 0.0, k, 1e-6) == pytest.approx(k * epsilon0)
    ledger = PrivacyLedger(events=[laplace(50.0)] * 3)
    assert ledger.epsilon_at(1e-6).epsilon <= 150.0 + 1e-9


def test_huge_releases_fall_back_to_the_accountings_that_hold():
    # ε = 10⁴ per release (the "large ε gives the non-private posterior" route tests):
    # dp-accounting's PLD overflows; the figure is then basic or advanced, never an error.
    ledger = PrivacyLedger(events=[laplace(1e4), laplace(1e4)])
    result = ledger.epsilon_at(1e-6)
    assert result.epsilon <= 2e4 + 1e-6
    assert math.isinf(result.per_method.get("pld", math.inf))


# --- Gaussian events (pymc_dp.mechanisms.gaussian) ---------------------------------------------
def gaussian(epsilon=1.0, delta=1e-7, sensitivity=1.0, **fields):
    """A Gaussian release as release_gaussian records it (σ and ρ from the calibration)."""
    from pymc_dp.mechanisms.gaussian import gaussian_calibration

    calibration = gaussian_calibration(sensitivity, epsilon, delta)
    base = {
        "mechanism": "gaussian",
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "noise_backend": "opendp",
        "noise_scale": calibration.scale,
        "rho": calibration.rho,
        "time": "2024-01-01T00:00:00+00:00",
    }
    return PrivacyEvent(**{**base, **fields})


def test_gaussian_events_compose_by_their_exact_pld_and_rdp():
    """100 Gaussian releases at (1, 1e-7), σ/Δ₂ ≈ 4.98: dp-accounting's own GaussianDpEvent
    accountants give the same figures; both are far below basic composition (100) and below
    zCDP's closed form (ρ adds: 100ρ, then Bun & Steinke Prop. 1.3)."""
    event = gaussian()
    result = epsilon_at([event] * 100, 1e-5)
    multiplier = event.noise_scale / event.sensitivity
    assert result.basic_only == ()
    assert result.per_method["basic"] == pytest.approx(100.0)
    reference_pld = pld.from_gaussian_mechanism(multiplier, value_discretization_interval=1e-4)
    exact_pld = reference_pld.self_compose(100).get_epsilon_for_delta(1e-5)
    assert result.per_method["pld"] == pytest.approx(exact_pld, abs=0.05)
    assert result.per_method["pld"] >= exact_pld - 1e-3  # pessimistic
    accountant = RdpAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(multiplier), 100)
    assert result.per_method["rdp"] == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-12)
    rho = 100 * event.rho
    zcdp = rho + 2 * math.sqrt(rho * math.log(1e5))
    assert result.epsilon < zcdp < 100.0
    assert result.method == "pld"


def test_one_gaussian_event_is_tight_at_its_own_delta():
    """Its exact PLD reads back (at most) its recorded ε at its δ: the calibration converts
    ρ loosely (Cor. 13 is a zCDP bound), the PLD is the exact Gaussian curve."""
    event = gaussian(1.0, 1e-6)
    result = epsilon_at([event], 1e-6)
    assert result.epsilon <= 1.0
    assert result.per_method["pld"] < 1.0


def test_inconsistent_gaussian_events_are_accounted_by_basic_composition_only():
    honest = gaussian(1.0, 1e-6)
    too_little_noise = gaussian(1.0, 1e-6, noise_scale=honest.noise_scale / 2)
    rho_too_small = gaussian(1.0, 1e-6, rho=honest.rho / 2)
    for event in (too_little_noise, rho_too_small):
        result = epsilon_at([event, honest], 1e-5)
        assert result.basic_only == (0,)
    assert epsilon_at([honest, honest], 1e-5).basic_only == ()


def test_gaussian_partition_is_represented_by_its_least_noisy_release():
    """Two Gaussian releases on disjoint parts cost at most the less noisy one alone."""
    quiet, noisy = gaussian(1.0, 1e-6, partition="g"), gaussian(0.5, 1e-6, partition="g")
    together = epsilon_at([quiet, noisy], 1e-5)
    assert together.basic_only == ()
    assert together.per_method["basic"] == pytest.approx(1.0)
    assert together.epsilon <= epsilon_at([gaussian(1.0, 1e-6)], 1e-5).epsilon + 1e-9
