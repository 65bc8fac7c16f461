"""Tests for the gaps the mutation-testing re-run 5 found in the mechanism modules
(docs/mutation_testing.md): the refusal message of a non-numeric statistic read from several
variables, the δ of a bisected tight temperature, and the bisection's stopping rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp import InvalidPrivateDataError
from pymc_dp.ledger import PrivacyEvent
from pymc_dp.mechanisms import laplace
from pymc_dp.mechanisms.exponential import calibrate_temperature_tight

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


def test_non_numeric_statistic_of_several_variables_names_them_comma_separated():
    """The message lists the variables as "a, b" (and never quotes a value)."""
    with pytest.raises(
        InvalidPrivateDataError,
        match=(
            r"^statistic of a, b must be numbers, got an array of dtype 'U'; "
            r"nothing was released$"
        ),
    ):
        laplace.check_release_inputs(
            np.array(["secret-7", "3.25"]), ["a", "b"], "replace-one", "numpy", None
        )


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
