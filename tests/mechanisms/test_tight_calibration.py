"""Tight calibration of posterior sampling: the same (ε, δ) at a lower temperature."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pymc_dp.accounting import epsilon_at
from pymc_dp.hmm.privacy import gibbs_sweep_events, gibbs_sweep_weight
from pymc_dp.ledger import PrivacyEvent
from pymc_dp.mechanisms.exponential import (
    calibrate_temperature,
    calibrate_temperature_tight,
    tight_release_epsilon,
)

DELTA = 1e-6


def _releases(epsilon0: float, k: int) -> PrivacyEvent:
    return PrivacyEvent(
        mechanism="gibbs-exponential",
        epsilon=k * epsilon0,
        delta=0.0,
        sensitivity=epsilon0 / 2,
        neighbouring="replace-one",
        variables=("theta",),
        noise_backend="numpy",
        temperature=1.0,
        compositions=k,
    )


def test_one_release_gets_the_whole_epsilon():
    for epsilon in (0.1, 1.0, 10.0):
        assert tight_release_epsilon(epsilon, DELTA, 1) == epsilon


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_per_release_epsilon_fits_and_is_monotone_in_k(epsilon):
    ks = [1, 2, 10, 100, 1000, 5000]
    releases = [tight_release_epsilon(epsilon, DELTA, k) for k in ks]
    assert all(a >= b for a, b in itertools.pairwise(releases))  # ε₀ falls with k
    totals = [k * e for k, e in zip(ks, releases, strict=True)]
    assert all(a <= b * (1 + 1e-9) for a, b in itertools.pairwise(totals))
    for k, release in zip(ks, releases, strict=True):
        assert release >= epsilon / k
        composed = epsilon_at([_releases(release, k)], DELTA)
        assert composed.epsilon <= epsilon * (1 + 1e-12)
        # nearly the largest: 1% more no longer fits (unless ε₀ = ε)
        if release < epsilon:
            assert epsilon_at([_releases(release * 1.01, k)], DELTA).epsilon > epsilon


def test_many_releases_get_far_more_than_their_share():
    # bounded-range composition: ε₀ ~ ε / sqrt(k log(1/δ) / 2) instead of ε/k
    release = tight_release_epsilon(1.0, DELTA, 1000)
    assert release * 1000 > 10.0
    assert epsilon_at([_releases(release, 1000)], DELTA).method == "bounded-range"
    assert tight_release_epsilon(10.0, DELTA, 10_000) * 10_000 > 100.0


def test_refuses_bad_arguments():
    with pytest.raises(ValueError, match="0 < delta < 1"):
        tight_release_epsilon(1.0, 0.0, 10)
    with pytest.raises(ValueError, match="compositions"):
        tight_release_epsilon(1.0, DELTA, 0)
    with pytest.raises(ValueError, match="epsilon"):
        tight_release_epsilon(-1.0, DELTA, 3)


def test_hmm_sweep_events_add_up_to_the_basic_cost():
    categories, lower = [2, 3, 4, 3], 1 / (10 * np.array([2, 3, 4, 3]))
    weight = gibbs_sweep_weight(categories, lower)
    events = gibbs_sweep_events(categories, lower, temperature=7.0, n_sweeps=30)
    assert sum(e.epsilon for e in events) == pytest.approx(30 * weight / 7.0)
    # states, then features 0, 1 and 3 (same Δ_d: one event), 2
    assert [e.compositions for e in events] == [30, 30 * 1, 30 * (2 + 2), 30 * 3]
    for event in events:
        assert event.epsilon / event.compositions == pytest.approx(2 * event.sensitivity / 7.0)
    assert epsilon_at(events, DELTA).basic_only == ()  # every event identified


@pytest.mark.parametrize("epsilon", [0.3, 3.0])
def test_tight_temperature_is_the_lowest_that_fits(epsilon):
    categories, lower = [2, 3, 4], 1 / (10 * np.array([2, 3, 4]))
    n_sweeps = 500

    def events_at(temperature):
        return gibbs_sweep_events(categories, lower, temperature=temperature, n_sweeps=n_sweeps)

    basic = calibrate_temperature(gibbs_sweep_weight(categories, lower), epsilon, n_sweeps)
    tight = calibrate_temperature_tight(
        events_at, epsilon, DELTA, basic_temperature=basic.temperature
    )
    assert 1.0 <= tight.temperature < basic.temperature / 3  # a large gain at n = 500
    assert epsilon_at(events_at(tight.temperature), DELTA).epsilon <= epsilon * (1 + 1e-12)
    assert tight.epsilon <= epsilon * (1 + 1e-12) and tight.gain > 3
    assert tight.composition.basic_epsilon > epsilon  # the sum is no longer the guarantee
    assert epsilon_at(events_at(tight.temperature / 1.002), DELTA).epsilon > epsilon


def test_tight_temperature_is_capped_at_one():
    def events_at(temperature):
        return [_releases(2.0 / temperature, 10)]

    tight = calibrate_temperature_tight(events_at, 100.0, DELTA, basic_temperature=1.0)
    assert tight.temperature == 1.0 and tight.epsilon <= 20.0


# --- found by mutation re-run 5 (docs/mutation_testing.md) ---------------------------------
def test_bisected_tight_temperature_reports_the_delta_it_was_asked_for():
    """k = 1000 releases of c/T at ε = 1 do not fit at T = 1, so T is bisected; the result
    still carries the requested δ (the routes format it with ``:g``)."""
    result = calibrate_temperature_tight(
        lambda t: [_releases(1.0 / t, 1000)], 1.0, DELTA, basic_temperature=1000.0
    )
    assert result.temperature > 1.0
    assert result.delta == DELTA and isinstance(result.delta, float)
    assert (result.target_epsilon, result.basic_temperature) == (1.0, 1000.0)


@pytest.mark.parametrize("rtol", [1e-3, 1e-2])
def test_tight_bisection_stops_at_its_relative_precision(rtol):
    """Bisection on log T halves log(high/low) per step, from log(basic_temperature) until
    high/low <= 1 + rtol: at most ceil(log2(log(basic)/log(1 + rtol))) steps, plus the two
    evaluations at the basic temperature and at T = 1 (docstring: it "stops when the two ends
    are within a relative rtol"), not a bisection to the last float."""
    basic = 1000.0
    calls = []

    def events_at(temperature):
        calls.append(temperature)
        return [_releases(1.0 / temperature, 1000)]

    calibrate_temperature_tight(events_at, 1.0, DELTA, basic_temperature=basic, rtol=rtol)
    steps = math.ceil(math.log2(math.log(basic) / math.log1p(rtol)))
    assert len(calls) <= 2 + steps + 1  # one step of slack for rounding
