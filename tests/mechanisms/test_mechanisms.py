"""Closed-form and property tests of the Laplace mechanism (``release_laplace``) and of the
calibration of posterior sampling (``calibrate_temperature``)."""

from __future__ import annotations

import copy
import math

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.mechanisms import (
    NOISE_BACKENDS,
    TemperatureCalibration,
    calibrate_temperature,
    gibbs_posterior_inverse_temperature,
    laplace_scale,
    release_laplace,
)

dp.enable_features("contrib")

# laplace_scale nudges the OpenDP scale up by factors of (1 + 2^-40), at most 64 times.
_NUDGE = 2.0**-40
_MAX_OPENDP_REL_EXCESS = 64 * _NUDGE

positive = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def _release(values, ledger=None, backend="numpy", rng=None, **overrides):
    kwargs = {
        "sensitivity": 2.0,
        "epsilon": 0.5,
        "ledger": PrivacyLedger() if ledger is None else ledger,
        "neighbouring": "replace-one",
        "variables": ("y", "p"),
        "statistic": "test statistic",
        "source": "test source",
        "backend": backend,
        "rng": rng,
    }
    kwargs.update(overrides)
    return release_laplace(values, **kwargs)


def _opendp_map(scale: float, sensitivity: float) -> float:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale).map(sensitivity)


# --- the scale -------------------------------------------------------------------------------


@given(sensitivity=positive, epsilon=positive)
def test_numpy_scale_is_exactly_sensitivity_over_epsilon(sensitivity, epsilon):
    assert laplace_scale(sensitivity, epsilon, "numpy") == sensitivity / epsilon


@settings(max_examples=40, deadline=None)
@given(sensitivity=positive, epsilon=positive)
def test_opendp_scale_is_certified_and_barely_above_sensitivity_over_epsilon(sensitivity, epsilon):
    scale = laplace_scale(sensitivity, epsilon, "opendp")
    exact = sensitivity / epsilon
    # Never below Δ/ε, and within the nudges (each 2^-40 relative, i.e. 4096 ulps).
    assert exact <= scale <= exact * (1 + _MAX_OPENDP_REL_EXCESS)
    # OpenDP's own (conservatively rounded) privacy map certifies the claimed epsilon.
    assert _opendp_map(scale, sensitivity) <= epsilon


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1, 1), (2, 1), (1, 0.1), (6, 0.25)])
def test_opendp_scale_on_common_values(sensitivity, epsilon):
    scale = laplace_scale(sensitivity, epsilon)  # OpenDP is the default backend
    assert scale == pytest.approx(sensitivity / epsilon, rel=_MAX_OPENDP_REL_EXCESS, abs=0)
    assert scale >= sensitivity / epsilon
    assert _opendp_map(scale, sensitivity) <= epsilon


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("backend", NOISE_BACKENDS)
def test_scale_rejects_invalid_epsilon_and_sensitivity(bad, backend):
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1.0, bad, backend)
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_scale(bad, 1.0, backend)


def test_scale_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        laplace_scale(1.0, 1.0, "torch")  # type: ignore[arg-type]


# --- the ledger: charged first, nothing released on failure ---------------------------------


class _SpyLedger(PrivacyLedger):
    """Records the state of a generator at the moment the ledger is charged."""

    def __init__(self, rng, **kwargs):
        super().__init__(**kwargs)
        self.rng = rng
        self.states_at_charge = []

    def charge(self, event):
        self.states_at_charge.append(copy.deepcopy(self.rng.bit_generator.state))
        return super().charge(event)


def test_ledger_event_has_the_release_fields():
    ledger = PrivacyLedger()
    noisy = _release(np.zeros(3), ledger=ledger, rng=np.random.default_rng(0))
    assert noisy.shape == (3,)
    (event,) = ledger.events
    assert event.mechanism == "laplace"
    assert event.epsilon == 0.5 and event.delta == 0.0
    assert event.sensitivity == 2.0
    assert event.noise_scale == 4.0
    assert event.neighbouring == "replace-one"
    assert event.variables == ("y", "p")
    assert event.noise_backend == "numpy"
    assert event.statistic == "test statistic" and event.source == "test source"
    assert ledger.epsilon == 0.5


def test_opendp_ledger_event_records_the_calibrated_scale():
    ledger = PrivacyLedger()
    _release(np.zeros(2), ledger=ledger, backend="opendp", sensitivity=1.0, epsilon=1.0)
    (event,) = ledger.events
    assert event.noise_backend == "opendp"
    assert event.noise_scale == laplace_scale(1.0, 1.0, "opendp")


def test_ledger_is_charged_before_any_noise_is_drawn():
    rng = np.random.default_rng(1)
    before = copy.deepcopy(rng.bit_generator.state)
    ledger = _SpyLedger(rng)
    _release(np.zeros(4), ledger=ledger, rng=rng)
    assert ledger.states_at_charge == [before]  # charged while the generator was untouched
    assert rng.bit_generator.state != before  # ... and the noise was drawn afterwards
    assert len(ledger) == 1


def test_budget_too_small_raises_and_changes_nothing():
    rng = np.random.default_rng(2)
    ledger = PrivacyLedger(budget=1.0)
    _release(np.zeros(2), ledger=ledger, rng=rng, epsilon=0.75)
    events, state = ledger.events, copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        _release(np.zeros(2), ledger=ledger, rng=rng, epsilon=0.5)
    assert ledger.events == events and ledger.epsilon == 0.75
    assert rng.bit_generator.state == state  # no noise drawn
    # The remaining budget can still be spent exactly.
    _release(np.zeros(2), ledger=ledger, rng=rng, epsilon=0.25)
    assert ledger.epsilon == pytest.approx(1.0)


def test_budget_too_small_with_opendp_leaves_ledger_unchanged():
    ledger = PrivacyLedger(budget=0.1)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        _release(np.zeros(2), ledger=ledger, backend="opendp", epsilon=0.2)
    assert len(ledger) == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("backend", NOISE_BACKENDS)
def test_non_finite_values_are_rejected_before_any_event(bad, backend):
    rng = np.random.default_rng(3) if backend == "numpy" else None
    state = None if rng is None else copy.deepcopy(rng.bit_generator.state)
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match="y, p"):
        _release(np.array([[1.0, bad], [0.0, 2.0]]), ledger=ledger, backend=backend, rng=rng)
    assert len(ledger) == 0
    if rng is not None:
        assert rng.bit_generator.state == state


@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan"), float("inf")])
@pytest.mark.parametrize("backend", NOISE_BACKENDS)
def test_invalid_epsilon_raises_value_error_and_releases_nothing(bad, backend):
    rng = np.random.default_rng(4) if backend == "numpy" else None
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="epsilon"):
        _release(np.zeros(2), ledger=ledger, backend=backend, rng=rng, epsilon=bad)
    assert len(ledger) == 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"sensitivity": 0.0}, "sensitivity"),
        ({"sensitivity": float("nan")}, "sensitivity"),
        ({"neighbouring": "swap-two"}, "neighbouring"),
        ({"backend": "torch"}, "backend"),
    ],
)
def test_other_invalid_arguments_raise_value_error(overrides, message):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=message):
        _release(np.zeros(2), ledger=ledger, **overrides)
    assert len(ledger) == 0


def test_rng_with_opendp_backend_is_rejected():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="rng"):
        _release(np.zeros(2), ledger=ledger, backend="opendp", rng=np.random.default_rng(0))
    assert len(ledger) == 0


# --- the noise -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (4, 1, 2)])
@pytest.mark.parametrize("backend", NOISE_BACKENDS)
def test_output_has_the_shape_and_dtype_of_the_input(shape, backend):
    rng = np.random.default_rng(0) if backend == "numpy" else None
    values = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    noisy = _release(values, backend=backend, rng=rng)
    assert noisy.shape == shape and noisy.dtype == np.float64
    assert np.all(np.isfinite(noisy))


def test_numpy_backend_is_reproducible_with_a_seed():
    first = _release(np.ones(5), rng=np.random.default_rng(42))
    second = _release(np.ones(5), rng=np.random.default_rng(42))
    np.testing.assert_array_equal(first, second)
    # The noise is exactly the generator's Laplace draws added to the values.
    expected = 1.0 + np.random.default_rng(42).laplace(0.0, 4.0, 5)
    np.testing.assert_array_equal(first, expected)


@pytest.mark.parametrize(
    ("backend", "ks_p", "n_se"),
    [
        ("numpy", 1e-3, 3.0),  # fixed seed: deterministic
        # OpenDP cannot be seeded: wider thresholds keep the false-alarm rate below ~1e-5.
        ("opendp", 1e-5, 4.5),
    ],
)
def test_noise_is_laplace_with_scale_sensitivity_over_epsilon(backend, ks_p, n_se):
    n, sensitivity, epsilon = 20_000, 2.0, 0.5
    scale = sensitivity / epsilon
    values = np.full(n, 3.0)
    rng = np.random.default_rng(123) if backend == "numpy" else None
    noise = _release(values, backend=backend, rng=rng) - values
    # Kolmogorov–Smirnov against Laplace(0, Δ/ε).
    assert stats.kstest(noise, stats.laplace(loc=0.0, scale=scale).cdf).pvalue > ks_p
    # |noise| ~ Exponential(scale): mean = scale, sd = scale (standard error scale/sqrt(n)).
    assert abs(np.mean(np.abs(noise)) - scale) < n_se * scale / math.sqrt(n)
    # Centred: mean 0, sd sqrt(2)·scale.
    assert abs(np.mean(noise)) < n_se * math.sqrt(2) * scale / math.sqrt(n)


def test_noise_scale_is_detected_by_the_ks_test():
    """The KS test has the power to tell a wrong scale apart (guards the test above)."""
    rng = np.random.default_rng(123)
    noise = _release(np.zeros(20_000), rng=rng)  # true scale 4
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue < 1e-6
    assert stats.kstest(noise, stats.laplace(scale=4.4).cdf).pvalue < 1e-3


# ------------------------------------------------------------------------------------------
# calibrate_temperature: T = max(1, n·cost/ε), spent = n·cost/T (Foulds §2.2, eq. 14, 19-20)
# ------------------------------------------------------------------------------------------


def test_calibration_closed_form_when_the_temperature_is_above_one():
    # 2Δ = 4 per draw, three draws, ε = 1: T = 3·4/1 = 12 and exactly ε is spent
    calibration = calibrate_temperature(4.0, 1.0, 3)
    assert isinstance(calibration, TemperatureCalibration)
    assert calibration.temperature == 12.0
    assert calibration.epsilon == pytest.approx(1.0)
    assert calibration.release_epsilon == pytest.approx(1.0 / 3)
    assert calibration.uncapped_temperature == 12.0 and not calibration.capped
    assert (calibration.cost_at_unit_temperature, calibration.n_releases) == (4.0, 3)
    assert calibration.target_epsilon == 1.0


def test_calibration_caps_the_temperature_at_one_and_charges_only_what_is_spent():
    # n·cost = 3·0.1 = 0.3 < ε = 1: T = 1 (never sharpened), spent 0.3, not 1
    calibration = calibrate_temperature(0.1, 1.0, 3)
    assert calibration.temperature == 1.0
    assert calibration.epsilon == pytest.approx(0.3)
    assert calibration.epsilon < calibration.target_epsilon
    assert calibration.capped and calibration.uncapped_temperature == pytest.approx(0.3)
    # one Bernoulli OPS draw with a0 = 0.2 at ε = 100: T = 1, charged 2Δ = 2 log 4
    ops = calibrate_temperature(2 * math.log(4), 100.0)
    assert (ops.temperature, ops.epsilon) == (1.0, pytest.approx(2 * math.log(4)))
    # exactly at the cap: T = 1 and the whole ε is spent
    edge = calibrate_temperature(0.5, 1.0, 2)
    assert (edge.temperature, edge.epsilon, edge.capped) == (1.0, 1.0, False)


def test_calibration_is_frozen():
    calibration = calibrate_temperature(4.0, 1.0)
    with pytest.raises(AttributeError, match=r"cannot assign to field 'temperature'"):
        calibration.temperature = 0.5


@settings(max_examples=100, deadline=None)
@given(
    cost=st.floats(0.0, 1e3),
    epsilon=st.floats(1e-3, 1e3),
    n=st.integers(1, 10_000),
)
def test_calibration_never_sharpens_and_never_overspends(cost, epsilon, n):
    calibration = calibrate_temperature(cost, epsilon, n)
    assert calibration.temperature >= 1.0
    assert calibration.epsilon <= epsilon * (1 + 1e-12)
    assert calibration.epsilon == pytest.approx(n * cost / calibration.temperature)
    assert calibration.epsilon == pytest.approx(min(epsilon, n * cost))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((math.inf, 1.0, 1), "finite number >= 0"),
        ((math.nan, 1.0, 1), "finite number >= 0"),
        ((-1.0, 1.0, 1), "finite number >= 0"),
        ((1.0, 0.0, 1), "epsilon"),
        ((1.0, -1.0, 1), "epsilon"),
        ((1.0, math.inf, 1), "epsilon"),
        ((1.0, 1.0, 0), "n_releases"),
        ((1.0, 1.0, 1.5), "n_releases"),
        ((1.0, 1.0, True), "n_releases"),
    ],
)
def test_calibration_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        calibrate_temperature(*args)


def test_gibbs_posterior_inverse_temperature_closed_form_and_cap():
    # β* = (√(m/2)/L)·ε/(√(ε + c) + √c), c = log(1/δ); capped at 1
    epsilon, delta, lipschitz, m = 1.0, 1e-5, math.sqrt(5.0), 1.0
    c = math.log(1 / delta)
    expected = math.sqrt(m / 2) / lipschitz * epsilon / (math.sqrt(epsilon + c) + math.sqrt(c))
    assert gibbs_posterior_inverse_temperature(epsilon, delta, lipschitz, m) == pytest.approx(
        expected, rel=1e-12
    )
    assert gibbs_posterior_inverse_temperature(1e6, 0.5, 1.0, 1.0) == 1.0
    for bad in [(0.0, 1e-5, 1.0, 1.0), (1.0, 0.0, 1.0, 1.0), (1.0, 1e-5, 0.0, 1.0)]:
        with pytest.raises(ValueError, match=r"epsilon|delta|lipschitz|Lipschitz|strong"):
            gibbs_posterior_inverse_temperature(*bad)


def test_numpy_noise_is_recorded_as_not_a_guarantee():
    from pymc_dp.mechanisms.laplace import release_laplace

    ledger = PrivacyLedger()
    release_laplace(
        np.array([3.0]),
        sensitivity=1.0,
        epsilon=1.0,
        ledger=ledger,
        neighbouring="replace-one",
        variables=("y",),
        statistic="count",
        backend="numpy",
        rng=np.random.default_rng(0),
    )
    assert ledger.events[0].unverified_assumption and not ledger.guaranteed
    release_laplace(
        np.array([3.0]),
        sensitivity=1.0,
        epsilon=1.0,
        ledger=(opendp := PrivacyLedger()),
        neighbouring="replace-one",
        variables=("y",),
        statistic="count",
    )
    assert opendp.guaranteed
