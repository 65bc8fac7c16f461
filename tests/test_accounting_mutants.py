"""Tests that kill the surviving mutants of ``pymc_dp.accounting`` (docs/mutation_testing.md).

Every expected figure is a closed form computed here (Balle & Wang 2018 Thm 8 with SciPy's
normal CDF; Kairouz, Oh & Viswanath 2015; Dong, Durfee & Rogers 2020) or dp-accounting's own
accountant, never a copy of an output of ``pymc_dp.accounting``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import pytest
from scipy import stats

from pymc_dp import PrivacyEvent, accounting
from pymc_dp.accounting import Composition, epsilon_at

DELTA = 1e-6


def laplace(epsilon, sensitivity=1.0, *, compositions=1, **fields):
    """k Laplace releases of scale b = kΔ/ε (ε in total)."""
    base = {
        "mechanism": "laplace",
        "epsilon": epsilon,
        "delta": 0.0,
        "sensitivity": sensitivity,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "noise_backend": "opendp",
        "noise_scale": sensitivity * compositions / epsilon,
        "compositions": compositions,
        "time": "2024-01-01T00:00:00+00:00",
    }
    return PrivacyEvent(**{**base, **fields})


def analytic_delta(epsilon, multiplier):
    """Balle & Wang 2018, Thm 8, at Δ₂ = 1, σ = ``multiplier``, μ = 1/σ:
    Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    mu = 1.0 / multiplier
    return stats.norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * stats.norm.cdf(
        -mu / 2 - epsilon / mu
    )


def analytic_sigma(epsilon, delta):
    """The smallest σ (Δ₂ = 1) whose Gaussian mechanism is (ε, δ)-DP, by bisection."""
    low, high = 1e-3, 1e3
    for _ in range(200):
        middle = math.sqrt(low * high)
        low, high = (low, middle) if analytic_delta(epsilon, middle) <= delta else (middle, high)
    return high


def gaussian(epsilon, delta, sigma, *, compositions=1, **fields):
    """k Gaussian releases of standard deviation σ at Δ₂ = 1, (ε, δ) in total, no ρ."""
    base = {
        "mechanism": "gaussian",
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": 1.0,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "noise_backend": "opendp",
        "noise_scale": sigma,
        "compositions": compositions,
        "time": "2024-01-01T00:00:00+00:00",
    }
    return PrivacyEvent(**{**base, **fields})


def gibbs(epsilon, sweeps=1, bound=0.5):
    """k exponential-mechanism releases at T = 2Δk/ε (ε in total)."""
    return PrivacyEvent(
        mechanism="gibbs-exponential",
        epsilon=epsilon,
        delta=0.0,
        sensitivity=bound,
        neighbouring="replace-one",
        variables=("p",),
        noise_backend="numpy",
        temperature=2 * bound * sweeps / epsilon,
        compositions=sweeps,
        time="2024-01-01T00:00:00+00:00",
    )


# --- Composition.to_dict ------------------------------------------------------------------------
def test_to_dict_names_every_field_and_writes_infinite_figures_as_none():
    result = Composition(
        epsilon=math.inf,
        delta=1e-6,
        method="basic",
        per_method={"basic": math.inf, "advanced": 2.5},
        basic_epsilon=3.0,
        basic_delta=1e-3,
        basic_only=(0, 2),
        assumes_convergence=True,
        unverified_assumptions=("secret seed",),
        notes=("a note",),
    )
    assert result.to_dict() == {
        "epsilon": None,
        "delta": 1e-6,
        "method": "basic",
        "per_method": {"basic": None, "advanced": 2.5},
        "basic_epsilon": 3.0,
        "basic_delta": 1e-3,
        "basic_only": [0, 2],
        "assumes_convergence": True,
        "unverified_assumptions": ["secret seed"],
        "notes": ["a note"],
    }
    with pytest.raises(TypeError):
        result.per_method["basic"] = 0.0  # read-only


# --- the exact Gaussian curve (consistency of Gaussian events) ----------------------------------
@pytest.mark.parametrize(
    ("epsilon", "multiplier"),
    [(1.0, 4.0), (0.5, 1.0), (1.0, 0.5), (3.0, 0.8), (0.1, 10.0), (2.0, 2.0)],
)
def test_gaussian_delta_is_balle_and_wang_theorem_8(epsilon, multiplier):
    expected = analytic_delta(epsilon, multiplier)
    assert expected > 1e-12
    assert accounting._gaussian_delta(epsilon, multiplier) == pytest.approx(expected, rel=1e-9)


def test_gaussian_delta_is_zero_where_the_curve_underflows():
    # δ(10⁶) at σ = Δ₂ is below e^(−10¹¹): both log-CDFs round to the same value
    assert accounting._gaussian_delta(1e6, 1.0) == 0.0


def test_a_gaussian_event_is_identified_exactly_when_its_noise_covers_its_claim():
    """Without ρ, only the analytic curve decides: σ at the analytic optimum is identified,
    0.1% less noise is not (accounted by basic composition only)."""
    epsilon, delta = 1.0, 1e-6
    sigma = analytic_sigma(epsilon, delta)
    for k in (1, 3):
        exact = gaussian(k * epsilon, k * delta, sigma * (1 + 1e-12), compositions=k)
        short = gaussian(k * epsilon, k * delta, sigma * (1 - 1e-3), compositions=k)
        assert epsilon_at([exact, exact], 1e-4).basic_only == ()
        assert epsilon_at([short, exact], 1e-4).basic_only == (0,)


# --- partitions ---------------------------------------------------------------------------------
def test_a_partition_with_a_multi_release_laplace_event_costs_at_least_that_event():
    """A partition holding Laplace(1) once and ten Laplace releases of ε = 0.2 each: one record
    can change the ten, so the total is at least their composition (dp-accounting's PLD at
    b/Δ = 5); it is not the single release's Laplace(1) curve."""
    single, chain = laplace(1.0, partition="p"), laplace(2.0, compositions=10, partition="p")
    reference = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    reference.compose(dp_accounting.LaplaceDpEvent(noise_multiplier=5.0), 10)
    lower = reference.get_epsilon(DELTA)
    assert lower > 1.5
    result = epsilon_at([single, chain], DELTA)
    assert result.basic_only == ()
    for method in ("advanced", "pld", "rdp"):
        assert result.per_method[method] >= lower - 1e-3


def test_a_partition_with_a_multi_release_gaussian_event_costs_at_least_that_event():
    epsilon, delta = 0.5, 1e-7
    sigma = analytic_sigma(epsilon, delta)
    one = gaussian(epsilon, delta, sigma * (1 + 1e-9), partition="g")
    chain = gaussian(10 * epsilon, 10 * delta, sigma * 2, compositions=10, partition="g")
    reference = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    reference.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma * 2), 10)
    lower = reference.get_epsilon(1e-5)
    result = epsilon_at([one, chain], 1e-5)
    assert result.basic_only == ()
    assert lower > epsilon
    for method in ("pld", "rdp"):
        assert result.per_method[method] >= lower - 1e-3


# --- classification: which events are identified, and their exact slot ------------------------
@dataclass(frozen=True)
class Bare:
    """A duck-typed event (``epsilon_at`` reads fields only): values PrivacyEvent refuses."""

    epsilon: float
    delta: float = 0.0
    mechanism: str | None = None
    sensitivity: float | None = 1.0
    noise_scale: float | None = None
    temperature: float | None = None
    compositions: object = 1
    rho: object = None
    partition: str = ""
    neighbouring: str = "replace-one"


Slot = accounting._Slot


def slot_of(event):
    return accounting._classify(event)


def test_a_laplace_event_is_its_scale_over_sensitivity_and_its_k_releases():
    # Δ = 2, b = 6: Δ/b = 1/3 per release, three releases of ε = 1/3 (ε = 1 in total)
    event = laplace(1.0, 2.0, compositions=3)
    assert event.noise_scale == 6.0
    assert slot_of(event) == Slot("laplace", 1.0, 0.0, 3, 3.0)
    # the recorded ε may exceed Δ/b by the 1e-9 slack, not more
    within = Bare(1.0, mechanism="laplace", noise_scale=1.0 / (1 + 5e-10))
    assert slot_of(within).kind == "laplace"
    beyond = Bare(1.0, mechanism="laplace", noise_scale=1.0 / (1 + 3e-9))
    assert slot_of(beyond).kind == "unknown"
    # a Laplace event spends no δ, has a scale and no temperature
    assert slot_of(Bare(1.0, 1e-9, "laplace", noise_scale=1.0)).kind == "unknown"
    assert slot_of(Bare(1.0, mechanism="laplace")).kind == "unknown"
    assert slot_of(Bare(1.0, mechanism="laplace", noise_scale=1.0, temperature=2.0)).kind == (
        "unknown"
    )


def test_compositions_and_sensitivity_must_be_valid_for_any_identification():
    ok = {"mechanism": "laplace", "noise_scale": 1.0}
    assert slot_of(Bare(1.0, **ok)) == Slot("laplace", 1.0, 0.0, 1, 1.0)
    for k in (0, -1, True, 2.0, "2", None):
        assert slot_of(Bare(2.0, compositions=k, **ok)) == Slot("unknown", 2.0, 0.0)
    for sensitivity in (None, 0.0, -1.0, math.inf, math.nan, "x", True):
        assert slot_of(Bare(1.0, sensitivity=sensitivity, **ok)) == Slot("unknown", 1.0, 0.0)

    class NoCompositions:  # a bare cost without the field is one release
        epsilon, delta, mechanism, sensitivity, noise_scale = 1.0, 0.0, "laplace", 1.0, 1.0

    assert slot_of(NoCompositions()) == Slot("laplace", 1.0, 0.0, 1, 1.0)
    # an unknown slot keeps the event's (ε, δ)
    assert slot_of(Bare(0.7, 1e-7, "something")) == Slot("unknown", 0.7, 1e-7)


def test_a_gaussian_event_is_identified_at_the_exact_curve_within_its_slack():
    sigma, epsilon, k = 3.0, 0.9, 3
    exact = analytic_delta(epsilon, sigma)  # δ of one release at σ/Δ₂ = 3 (Δ₂ = 2, σ = 6)

    def event(total_delta, **fields):
        base = {"mechanism": "gaussian", "sensitivity": 2.0, "noise_scale": 6.0}
        return Bare(k * epsilon, total_delta, compositions=k, **{**base, **fields})

    covered = event(k * exact / (1 + 5e-10))
    assert slot_of(covered) == Slot("gaussian", k * epsilon, k * exact / (1 + 5e-10), k, 3.0)
    assert slot_of(event(k * exact / (1 + 3e-9))).kind == "unknown"
    # δ must be in (0, 1), a scale recorded, no temperature
    for bad in ({"noise_scale": None}, {"temperature": 2.0}):
        assert slot_of(event(k * exact, **bad)).kind == "unknown"
    assert slot_of(Bare(1e6, 0.0, "gaussian", noise_scale=1.0)).kind == "unknown"
    assert slot_of(Bare(1.0, 1.0, "gaussian", noise_scale=1.0)).kind == "unknown"
    # ρ, when recorded, must cover Δ₂²/(2σ²) per release (1e-9 slack)
    rho = k * 0.5 / 3.0**2
    assert slot_of(event(k * exact, rho=rho * (1 - 5e-10))).kind == "gaussian"
    for bad_rho in (rho * (1 - 3e-9), 0.0, -rho, math.nan, "x", True):
        assert slot_of(event(k * exact, rho=bad_rho)).kind == "unknown"


@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_an_exponential_event_is_identified_when_its_epsilon_covers_two_bounds_over_t(mechanism):
    # Δ = 0.5, T = 1: one release costs 2Δ/T = 1; k = 4 releases
    def event(epsilon, temperature=1.0, **fields):
        base = {"mechanism": mechanism, "sensitivity": 0.5, "temperature": temperature}
        return Bare(epsilon, compositions=4, **{**base, **fields})

    assert slot_of(event(4.0)) == Slot("exponential", 4.0, 0.0, 4)
    assert slot_of(event(4.0 * (1 - 5e-10))).kind == "exponential"
    assert slot_of(event(4.0 * (1 - 3e-9))).kind == "unknown"
    assert slot_of(event(4.0, 1 - 1e-9)).kind == "unknown"  # T < 1
    assert slot_of(event(4.0, None)).kind == "unknown"
    assert slot_of(event(4.0, noise_scale=1.0)).kind == "unknown"
    assert slot_of(event(4.0, delta=1e-9)).kind == "unknown"


def test_metropolis_and_gibbs_posterior_events_are_dp_releases():
    metropolis = Bare(4.0, 1e-6, "metropolis", sensitivity=0.5, temperature=1.0, compositions=4)
    assert slot_of(metropolis) == Slot("dp", 4.0, 1e-6, 4)
    uncalibrated = Bare(4.0 * (1 - 3e-9), 1e-6, "metropolis", 0.5, temperature=1.0, compositions=4)
    assert slot_of(uncalibrated).kind == "unknown"
    assert slot_of(Bare(1.0, 1e-6, "gibbs_posterior")) == Slot("dp", 1.0, 1e-6, 1)
    assert slot_of(Bare(2.0, 1e-6, "gibbs_posterior", compositions=2)).kind == "unknown"
    # another mechanism with a calibrated temperature is still unknown
    assert slot_of(Bare(1.0, 0.0, "tempered", sensitivity=0.5, temperature=1.0)).kind == "unknown"


def test_the_temperature_divides_the_bound_in_the_calibration_check():
    # Δ = 0.5, T = 2.5: one release costs 2Δ/T = 0.4
    event = Bare(0.4, 0.0, "gibbs-exponential", sensitivity=0.5, temperature=2.5)
    assert slot_of(event) == Slot("exponential", 0.4, 0.0, 1)
    assert slot_of(Bare(0.399, 0.0, "ops", sensitivity=0.5, temperature=2.5)).kind == "unknown"


# --- epsilon_at's arguments -------------------------------------------------------------------
def test_epsilon_at_refuses_a_delta_outside_zero_one_by_name():
    for bad in (1.0, 1.5, -1e-300, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^delta must satisfy 0 <= delta < 1, got "):
            epsilon_at([], bad)
    assert epsilon_at([laplace(1.0)], 0.0).epsilon == 1.0
    assert epsilon_at([laplace(1.0)], 1 - 1e-12).delta == 1 - 1e-12


def test_events_with_unhashable_fields_are_accounted_like_hashable_ones():
    hashable = Bare(0.5, mechanism="laplace", noise_scale=2.0)
    unhashable = Bare(0.5, mechanism="laplace", noise_scale=2.0, rho=[1.0])  # rho unread
    with pytest.raises(TypeError):
        hash(unhashable)
    expected = epsilon_at([hashable] * 20, DELTA)
    result = epsilon_at([unhashable] * 20, DELTA)
    assert result == expected and result.per_method == expected.per_method
    assert result.basic_only == () and result.method == "pld"


# --- representatives of partitions ------------------------------------------------------------
def martingale_terms(kind, epsilon, k):
    """(Σ mean bounds, Σ squared ranges) of k releases of ε each (module docstring)."""
    if kind == "exponential":
        x = epsilon / (1 - math.exp(-epsilon))
        return k * min(epsilon**2 / 8, x - 1 - math.log(x)), k * epsilon**2
    return k * epsilon * math.tanh(epsilon / 2), k * 4 * epsilon**2


def test_a_partitions_representative_dominates_each_of_its_events():
    rep = accounting._representative
    one = Slot("laplace", 1.0, 0.0, 1, 2.0)
    assert rep([one]) == one and rep([one, one]) == one
    # single Laplace releases: the largest ε and the smallest b/Δ (here from different events)
    assert rep([one, Slot("laplace", 0.5, 0.0, 1, 1.5)]) == Slot("laplace", 1.0, 0.0, 1, 1.5)
    # single Gaussian releases: the largest (ε, δ) and the smallest σ/Δ₂
    gaussians = [Slot("gaussian", 1.0, 1e-7, 1, 5.0), Slot("gaussian", 0.5, 1e-6, 1, 4.0)]
    assert rep(gaussians) == Slot("gaussian", 1.0, 1e-6, 1, 4.0)
    # an unidentified event: an unidentified (max ε, max δ)
    assert rep([one, Slot("unknown", 0.5, 1e-7)]) == Slot("unknown", 1.0, 1e-7)
    # k > 1, or mixed kinds: a generic release with the largest martingale terms
    chain = Slot("laplace", 2.0, 0.0, 10, 5.0)
    terms = [martingale_terms("laplace", 1.0, 1), martingale_terms("laplace", 0.2, 10)]
    expected = (max(t[0] for t in terms), max(t[1] for t in terms))
    assert rep([one, chain]) == Slot("dp", 2.0, 0.0, 1, None, expected)
    gaussian_chain = Slot("gaussian", 2.0, 1e-6, 4, 3.0)
    terms = [martingale_terms("gaussian", 1.0, 1), martingale_terms("gaussian", 0.5, 4)]
    expected = (max(t[0] for t in terms), max(t[1] for t in terms))
    assert rep([gaussians[0], gaussian_chain]) == Slot("dp", 2.0, 1e-6, 1, None, expected)
    chain_slot = Slot("exponential", 0.8, 0.0, 1000)
    terms = [martingale_terms("laplace", 1.0, 1), martingale_terms("exponential", 0.0008, 1000)]
    expected = (max(t[0] for t in terms), max(t[1] for t in terms))
    mixed = rep([one, chain_slot])
    assert mixed.kind == "dp" and (mixed.epsilon, mixed.delta, mixed.compositions) == (1.0, 0.0, 1)
    assert mixed.martingale_terms == pytest.approx(expected, rel=1e-12)
    single_mixed = rep([one, Slot("exponential", 0.5, 0.0, 1)])
    assert single_mixed.kind == "dp" and single_mixed.noise_multiplier is None


# --- the tight accountings' bookkeeping -------------------------------------------------------
def test_unidentified_deltas_are_spent_first_and_exactly_all_of_delta_still_counts():
    chain = [laplace(0.1)] * 10
    over = epsilon_at([Bare(0.5, 2e-6, "other"), *chain], 1e-6)
    assert over.per_method == {"basic": math.inf, "advanced": math.inf, "pld": math.inf}
    assert "the unidentified events' deltas alone exceed δ" in over.notes
    # the unidentified δ equals δ: the rest is accounted at δ = 0, i.e. pure composition
    exact = epsilon_at([Bare(0.5, 1e-6, "other"), *chain], 1e-6)
    assert exact.per_method["advanced"] == pytest.approx(1.5, rel=1e-12)
    assert exact.per_method["pld"] >= 1.5  # dp-accounting: ∞ at δ = 0 (its tail)
    assert math.isinf(exact.per_method["rdp"])  # RDP needs some δ left


def test_rdp_spends_the_other_releases_deltas_and_adds_their_epsilons():
    """50 Laplace releases (b/Δ = 10) and one (0.3, 1e-7)-DP release at δ = 1e-6: RDP
    accounts the Laplace releases at δ − 1e-7 and adds 0.3 (whether split off or not)."""
    metropolis = Bare(0.3, 1e-7, "metropolis", sensitivity=0.15, temperature=1.0)
    result = epsilon_at([*[laplace(0.1)] * 50, metropolis], 1e-6)
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.LaplaceDpEvent(noise_multiplier=10.0), 50)
    assert result.per_method["rdp"] == pytest.approx(
        accountant.get_epsilon(1e-6 - 1e-7) + 0.3, rel=1e-12
    )
    assert result.basic_only == ()


def azuma(releases, delta):
    """Dong, Durfee & Rogers Prop. 4 with pure-DP terms: releases are (kind, ε, k)."""
    total = sum(e * k for _, e, k in releases)
    terms = [martingale_terms(kind, e, k) for kind, e, k in releases]
    mean, squares = sum(t[0] for t in terms), sum(t[1] for t in terms)
    return min(total, mean + math.sqrt(0.5 * squares * math.log(1 / delta)))


def test_bounded_range_tries_leaving_every_tail_of_large_releases_to_basic_composition():
    """A Gibbs chain of 12,000 sweeps (ε = 1) with Laplace releases of 0.01 and 0.02: the
    figure is the smallest over leaving nothing, the 0.02, or both to basic composition."""
    delta = 1e-6
    chain = ("exponential", 1.0 / 12_000, 12_000)
    small, large = ("laplace", 0.01, 1), ("laplace", 0.02, 1)
    candidates = [
        azuma([chain, small, large], delta),
        azuma([chain, small], delta) + 0.02,
        azuma([chain], delta) + 0.03,
    ]
    assert candidates[2] < min(candidates[:2])  # leaving both is best here
    events = [gibbs(1.0, 12_000), laplace(0.01), laplace(0.02)]
    result = epsilon_at(events, delta)
    assert result.per_method["bounded-range"] == pytest.approx(min(candidates), rel=1e-9)
    assert result.basic_only == ()


def test_bounded_range_needs_every_event_pure_and_an_exponential_mechanism():
    chain = gibbs(1.0, 100)
    impure = Bare(0.3, 1e-7, "metropolis", sensitivity=0.15, temperature=1.0)
    result = epsilon_at([chain, impure], 1e-6)
    assert "bounded-range" not in result.per_method
    assert "bounded-range composition needs every event pure (δ = 0)" in result.notes
    impure_unknown = epsilon_at([chain, Bare(0.3, 1e-7, "other")], 1e-6)
    assert "bounded-range" not in impure_unknown.per_method
    pure = epsilon_at([chain, laplace(0.3)], 1e-6)
    assert "bounded-range" in pure.per_method
    assert not any("bounded-range" in note for note in pure.notes)
    # pure releases without an exponential mechanism: no bounded-range figure and no note
    laplaces = epsilon_at([laplace(0.3)] * 3, 1e-6)
    assert "bounded-range" not in laplaces.per_method
    assert not any("bounded-range" in note for note in laplaces.notes)


def test_pld_is_skipped_only_when_every_release_is_the_same_dp_release():
    same = epsilon_at([gibbs(0.5)] * 10, 1e-6)
    assert "pld" not in same.per_method
    assert (
        "pld: not computed (every release is the same (ε, δ): advanced composition is "
        "already the exact optimum, Kairouz et al. Thm 3.3)"
    ) in same.notes
    unequal = epsilon_at([gibbs(0.5), gibbs(0.25)], 1e-6)
    assert "pld" in unequal.per_method
    assert not any(note.startswith("pld: not computed") for note in unequal.notes)


# --- bounded range's mean, PLD and RDP ----------------------------------------------------------
def br_mean(epsilon):
    """m(ε) = ε/(1 − e^{−ε}) − 1 − log(ε/(1 − e^{−ε})) (Dong, Durfee & Rogers 2020)."""
    x = epsilon / (1 - math.exp(-epsilon))
    return x - 1 - math.log(x)


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 5.0, 20.0])
def test_the_bounded_range_mean_is_m_of_epsilon_rounded_up_by_1e_9(epsilon):
    value = accounting._br_mean(epsilon)
    exact = br_mean(epsilon)
    assert exact < epsilon**2 / 8
    assert exact * (1 + 5e-10) <= value <= exact * (1 + 2e-9)
    # below 0.01 the bound ε²/8 is used (m(ε) = ε²/8 − ε⁴/384 + ...: the same to 1e-7)
    assert accounting._br_mean(0.005) == 0.005**2 / 8


def metropolis_event(epsilon, delta):
    return Bare(epsilon, delta, "metropolis", sensitivity=epsilon / 2, temperature=1.0)


def test_pld_is_dp_accountings_composition_on_the_documented_grid():
    """100 Laplace releases of ε = 0.01, one of ε = 2 and two (0.3, 1e-7)-DP releases:
    h = max(ε_min/100, (16·sqrt(Σ k ε²) + 2 ε_max)/2·10⁵), every PLD pessimistic on it."""
    delta = 1e-5
    events = [*[laplace(0.01)] * 100, laplace(2.0), *[metropolis_event(0.3, 1e-7)] * 2]
    h = max(0.01 / 100, (16 * math.sqrt(100 * 0.01**2 + 2.0**2 + 2 * 0.3**2) + 2 * 2.0) / 2e5)
    assert h > 0.01 / 100
    pld = dp_accounting.pld.privacy_loss_distribution
    composed = (
        pld.from_laplace_mechanism(100.0, value_discretization_interval=h)
        .self_compose(100)
        .compose(pld.from_laplace_mechanism(0.5, value_discretization_interval=h))
        .compose(
            pld.from_privacy_parameters(
                dp_accounting.pld.common.DifferentialPrivacyParameters(0.3, 1e-7),
                value_discretization_interval=h,
            ).self_compose(2)
        )
    )
    result = epsilon_at(events, delta)
    assert f"pld: pessimistic, discretisation interval {h:.3g}" in result.notes
    assert result.per_method["pld"] == pytest.approx(
        composed.get_epsilon_for_delta(delta), rel=1e-9
    )

    # RDP: the Laplace releases at δ − 2e-7, plus 0.6; or the ε = 2 release left to basic too
    def rdp(events_and_counts, at):
        accountant = dp_accounting.rdp.RdpAccountant()
        for event, count in events_and_counts:
            accountant.compose(event, count)
        return accountant.get_epsilon(at)

    small, large = dp_accounting.LaplaceDpEvent(100.0), dp_accounting.LaplaceDpEvent(0.5)
    expected = min(
        rdp([(small, 100), (large, 1)], delta - 2e-7) + 0.6,
        rdp([(small, 100)], delta - 2e-7) + 0.6 + 2.0,
    )
    assert result.per_method["rdp"] == pytest.approx(expected, rel=1e-12)


def test_rdp_composes_gaussian_and_laplace_events_by_their_own_curves():
    epsilon, delta0 = 1.0, 1e-7
    sigma = analytic_sigma(epsilon, delta0) * (1 + 1e-9)
    events = [gaussian(epsilon, delta0, sigma), laplace(0.5), laplace(0.5)]
    delta = 1e-5
    both = dp_accounting.rdp.RdpAccountant()
    both.compose(dp_accounting.GaussianDpEvent(sigma), 1)
    both.compose(dp_accounting.LaplaceDpEvent(2.0), 2)
    alone = dp_accounting.rdp.RdpAccountant()
    alone.compose(dp_accounting.LaplaceDpEvent(2.0), 2)
    expected = min(both.get_epsilon(delta), alone.get_epsilon(delta - delta0) + epsilon)
    result = epsilon_at(events, delta)
    assert result.basic_only == ()
    assert result.per_method["rdp"] == pytest.approx(expected, rel=1e-12)


# --- advanced composition: Kairouz, Oh & Viswanath 2015 -----------------------------------------
def rr_delta(epsilon0, k, epsilon_g):
    """δ'(ε_g) of k randomized responses, term by term (module docstring of accounting)."""
    p = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    return math.fsum(
        math.comb(k, ell)
        * p ** (k - ell)
        * (1 - p) ** ell
        * max(0.0, -math.expm1(epsilon_g - (k - 2 * ell) * epsilon0))
        for ell in range(k + 1)
    )


@pytest.mark.parametrize("epsilon_g", [0.0, 0.3, 1.0, 2.4, 4.5, 4.9])
def test_the_randomized_response_delta_is_the_binomial_sum_rounded_up(epsilon_g):
    k, epsilon0 = 10, 0.5
    expected = rr_delta(epsilon0, k, epsilon_g)
    assert expected > 1e-4
    value = accounting._rr_delta(epsilon0, k, epsilon_g)
    assert expected * (1 + 0.5e-12) <= value <= expected * (1 + 2e-12)
    assert accounting._rr_delta(epsilon0, k, 5.0) == 0.0  # no loss exceeds kε₀
    assert accounting._rr_delta(epsilon0, k, 6.0) == 0.0


def test_theorem_3_3_for_one_release_is_its_closed_form():
    """k = 1: δ'(ε_g) = p(1 − e^{ε_g − ε₀}), so ε_g = ε₀ + log(1 − δ(1 + e^{−ε₀}))."""
    for epsilon0, delta in [(1.0, 0.1), (0.5, 0.05), (2.0, 0.01)]:
        exact = epsilon0 + math.log(1 - delta * (1 + math.exp(-epsilon0)))
        assert 0 < exact < epsilon0
        value = accounting._kov_homogeneous(epsilon0, 0.0, 1, delta)
        assert exact <= value <= exact + 1e-12
    # with δ₀ per release: 1 − (1 − δ₀)(1 − δ') = δ, so δ' = 1 − (1 − δ)/(1 − δ₀)
    epsilon0, delta0, delta = 1.0, 0.01, 0.1
    slack = 1 - (1 - delta) / (1 - delta0)
    exact = epsilon0 + math.log(1 - slack * (1 + math.exp(-epsilon0)))
    value = accounting._kov_homogeneous(epsilon0, delta0, 1, delta)
    assert exact - 1e-12 <= value <= exact + 1e-12
    # a δ at least δ'(0) = (e^ε₀ − 1)/(e^ε₀ + 1): ε_g = 0
    assert accounting._kov_homogeneous(1.0, 0.0, 1, 0.5) == 0.0
    # the releases' own deltas exceed δ: not (kε₀, δ)-DP
    assert accounting._kov_homogeneous(0.5, 1e-3, 10, 5e-3) == math.inf


def test_theorem_3_5_at_a_delta_that_the_releases_deltas_exhaust_is_basic():
    releases = [(0.1, 1e-3, 1), (0.2, 0.0, 1)]
    delta = -math.expm1(math.log1p(-1e-3))  # exactly 1 − (1 − δ₁): δ̃ = 0
    assert accounting._kov_heterogeneous(releases, delta) == pytest.approx(0.3, rel=1e-15)


def test_the_exact_theorem_is_used_up_to_ten_to_the_five_releases():
    epsilon0, delta = 0.001, 1e-6

    def theorem_3_5(k):
        mean = k * epsilon0 * math.tanh(epsilon0 / 2)
        squares = k * epsilon0**2
        return min(
            k * epsilon0,
            mean + math.sqrt(2 * squares * math.log(math.e + math.sqrt(squares) / delta)),
            mean + math.sqrt(2 * squares * math.log(1 / delta)),
        )

    at_limit = accounting._advanced([Slot("exponential", 100.0, 0.0, 100_000)], delta)
    assert at_limit < theorem_3_5(100_000) * (1 - 1e-3)  # Thm 3.3, the exact optimum
    above = accounting._advanced([Slot("exponential", 100.001, 0.0, 100_001)], delta)
    assert above == pytest.approx(theorem_3_5(100_001), rel=1e-12)


def test_releases_are_homogeneous_to_1e_12_relative():
    one = Slot("dp", 1.0, 1e-7, 1)
    assert accounting._homogeneous([one, Slot("dp", 1.0 * (1 + 1e-13), 1e-7, 1)])
    assert not accounting._homogeneous([one, Slot("dp", 1.0 * (1 + 1e-10), 1e-7, 1)])
    assert not accounting._homogeneous([one, Slot("dp", 1.0, 1e-7 * (1 + 1e-10), 1)])
    assert accounting._homogeneous([one])


@pytest.mark.parametrize(
    "releases",
    [
        [(2.0, 0.0, 3), (1.5, 1e-9, 2)],  # few large releases: Σ ε is the minimum
        [(0.1, 1e-7, 30), (0.05, 1e-7, 40)],  # sqrt(Σ ε²) < 1: the log(e + ...) term
        [(0.2, 1e-8, 200), (0.1, 1e-8, 300)],  # sqrt(Σ ε²) > 1: the log(1/δ̃) term
    ],
)
def test_theorem_3_5_is_the_smallest_of_its_three_bounds(releases):
    delta = 1e-5
    keep = math.prod((1 - d) ** n for _, d, n in releases)
    slack = 1 - (1 - delta) / keep  # δ̃
    total = sum(e * n for e, _, n in releases)
    mean = sum(n * e * (math.exp(e) - 1) / (math.exp(e) + 1) for e, _, n in releases)
    squares = sum(n * e * e for e, _, n in releases)
    bounds = [
        total,
        mean + math.sqrt(2 * squares * math.log(math.e + math.sqrt(squares) / slack)),
        mean + math.sqrt(2 * squares * math.log(1 / slack)),
    ]
    value = accounting._kov_heterogeneous(releases, delta)
    assert value == pytest.approx(min(bounds), rel=1e-9)
    assert sorted(bounds)[0] < sorted(bounds)[1] * (1 - 1e-6)  # a unique minimum


def test_a_bare_cost_without_mechanism_fields_is_accounted_by_basic_composition():
    class Cost:  # what PrivacyLedger.check composes: ε, δ and a partition only
        epsilon, delta, partition = 0.25, 0.0, ""

    result = epsilon_at([Cost(), laplace(0.1), laplace(0.1)], DELTA)
    assert result.basic_only == (0,)
    assert result.per_method["advanced"] == pytest.approx(
        accounting._kov_homogeneous(0.1, 0.0, 2, DELTA) + 0.25, rel=1e-12
    )


def test_a_gaussian_release_without_a_rho_field_is_identified_by_its_curve():
    sigma = analytic_sigma(1.0, 1e-6) * (1 + 1e-9)

    class Release:  # no rho, no temperature attribute at all
        mechanism, epsilon, delta, sensitivity, noise_scale = "gaussian", 1.0, 1e-6, 1.0, sigma

    assert slot_of(Release()) == Slot("gaussian", 1.0, 1e-6, 1, sigma)


def test_theorem_3_5_is_infinite_when_the_releases_deltas_exceed_delta():
    assert accounting._kov_heterogeneous([(0.1, 1e-3, 10), (0.2, 0.0, 1)], 5e-3) == math.inf
    # Theorem 3.3's bound rounds to 1 for ε₀ = 20: nothing below kε₀ fits
    assert accounting._kov_homogeneous(20.0, 0.0, 3, 1e-6) == pytest.approx(60.0)


def test_gaussian_releases_enter_the_pld_by_their_exact_curve():
    """Two Gaussian releases (σ/Δ₂ for (1, 1e-7)) and one Laplace release of ε = 0.5:
    h = ε_min/100 = 0.005 here; the Gaussian PLD is dp-accounting's from_gaussian_mechanism."""
    delta = 1e-5
    sigma = analytic_sigma(1.0, 1e-7) * (1 + 1e-9)
    events = [gaussian(1.0, 1e-7, sigma), gaussian(1.0, 1e-7, sigma), laplace(0.5)]
    h = max(0.5 / 100, (16 * math.sqrt(1.0 + 1.0 + 0.25) + 2 * 1.0) / 2e5)
    assert h == 0.005
    pld = dp_accounting.pld.privacy_loss_distribution
    gaussians = pld.from_gaussian_mechanism(sigma, sensitivity=1.0, value_discretization_interval=h)
    together = gaussians.self_compose(2).compose(
        pld.from_laplace_mechanism(2.0, value_discretization_interval=h)
    )
    expected = together.get_epsilon_for_delta(delta)
    alone = pld.from_laplace_mechanism(2.0, value_discretization_interval=h)
    assert expected < alone.get_epsilon_for_delta(delta - 2e-7) + 2.0  # no split is best
    result = epsilon_at(events, delta)
    assert "pld: pessimistic, discretisation interval 0.005" in result.notes
    assert result.per_method["pld"] == pytest.approx(expected, rel=1e-9)


def test_a_release_left_to_basic_composition_spends_its_delta_before_the_pld():
    """100 Laplace releases (b/Δ = 10) and one (3, 1e-7)-DP release at δ = 1e-6: the PLD is
    computed without a split and with the (3, 1e-7) release left to basic composition, whose
    δ is then spent first (the Laplace PLD at δ − 1e-7); the smaller figure is kept."""
    delta, h = 1e-6, 0.001  # h = ε_min/100 for both
    pld = dp_accounting.pld.privacy_loss_distribution
    laplaces = pld.from_laplace_mechanism(10.0, value_discretization_interval=h).self_compose(100)
    pair = pld.from_privacy_parameters(
        dp_accounting.pld.common.DifferentialPrivacyParameters(3.0, 1e-7),
        value_discretization_interval=h,
    )
    no_split = laplaces.compose(pair).get_epsilon_for_delta(delta)
    split = laplaces.get_epsilon_for_delta(delta - 1e-7) + 3.0
    result = epsilon_at([*[laplace(0.1)] * 100, metropolis_event(3.0, 1e-7)], delta)
    assert result.per_method["pld"] == pytest.approx(min(no_split, split), rel=1e-9)


def test_each_partition_contributes_its_own_largest_release():
    events = [
        laplace(1.0, partition="a"),
        laplace(0.5, partition="a"),
        laplace(0.7, partition="b"),
        laplace(0.2),
    ]
    basic_eps, basic_delta = accounting.basic_composition(events)
    assert (basic_eps, basic_delta) == (pytest.approx(1.0 + 0.7 + 0.2, rel=1e-15), 0.0)
    # tightly: partition a is one Laplace(1) release, partition b one Laplace(1/0.7); for
    # three pure releases the tight figure at δ = 1e-6 is near their sum, above any one pair
    result = epsilon_at(events, DELTA)
    assert 1.7 < result.epsilon <= 1.9 + 1e-12


def test_why_the_pld_was_not_computed_is_noted():
    notes = []
    slot = Slot("exponential", 2e6 * 1e-3, 0.0, 2_000_000)
    assert accounting._pld_figure([slot], DELTA, notes) == math.inf
    assert notes == ["pld: not computed for 2000000 releases (more than 10^6)"]
    # dp-accounting refuses a δ above 1: ∞ (not applicable), and the error is named
    notes = []
    assert accounting._pld([Slot("dp", 1.0, 1.5, 1)], DELTA, notes) == math.inf
    assert notes == ["pld: not computed (ValueError in dp-accounting)"]
