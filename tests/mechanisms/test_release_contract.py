"""The contract of the calibration and release functions, written to kill the mutants that
survived mutation testing (docs/mutation_testing.md): uncached calibration, every field of a
release's ledger event, which noise source each backend uses, the boundaries of δ, names in
error messages, and the precision the bisections promise."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.accounting import epsilon_at
from pymc_dp.ledger import PrivacyEvent, validate_delta
from pymc_dp.mechanisms import gaussian, laplace
from pymc_dp.mechanisms.exponential import (
    calibrate_temperature_tight,
    gibbs_posterior_inverse_temperature,
    tight_release_epsilon,
)

DELTA = 1e-6


# --- the one check of δ ----------------------------------------------------------------------
@pytest.mark.parametrize("delta", [0.0, 1e-300, 0.5, 1 - 1e-12])
def test_validate_delta_accepts_the_unit_interval_from_zero(delta):
    assert validate_delta(delta) == delta


@pytest.mark.parametrize("delta", [1.0, 1.5, 2.0, -1e-12, math.nan, math.inf, -math.inf])
def test_validate_delta_refuses_outside_it(delta):
    with pytest.raises(ValueError, match=r"^delta must satisfy 0 <= delta < 1, got"):
        validate_delta(delta)


@pytest.mark.parametrize("delta", [0.0, 1.0, math.nan])
def test_validate_delta_positive_refuses_zero_and_says_why(delta):
    with pytest.raises(ValueError, match=r"^eps_delta must satisfy 0 < eps_delta < 1 \(why\)"):
        validate_delta(delta, "eps_delta", positive=True, reason=" (why)")


# --- the Gaussian mechanism -------------------------------------------------------------------
def test_gaussian_calibration_computed_afresh_is_certified_and_minimal():
    """The calibration is cached; computed afresh (cache cleared), OpenDP's own map of the
    chain at the returned σ certifies (ε, δ) and 1% less noise does not."""
    gaussian._calibrate.cache_clear()
    calibration = gaussian.gaussian_calibration(1.0, 1.0, DELTA)
    assert calibration.scale == pytest.approx(4.53, abs=0.01)
    certified = gaussian._approx_measurement(calibration.scale, DELTA).map(1.0)
    assert certified[0] <= 1.0 and certified[1] <= DELTA
    assert gaussian._approx_measurement(0.99 * calibration.scale, DELTA).map(1.0)[0] > 1.0
    assert calibration.rho == pytest.approx(1.0 / (2 * calibration.scale**2), rel=1e-6)
    assert (calibration.epsilon, calibration.delta, calibration.sensitivity) == (1.0, DELTA, 1.0)


def _release(backend="numpy", rng=None, **fields):
    ledger = PrivacyLedger()
    noisy = gaussian.release_gaussian(
        np.array([[3.0, 4.0], [5.0, 6.0]]),
        sensitivity=2.0,
        epsilon=1.0,
        delta=DELTA,
        ledger=ledger,
        neighbouring="replace-one",
        variables=["y"],
        statistic="sums",
        backend=backend,
        rng=rng,
        **fields,
    )
    return noisy, ledger


def test_gaussian_event_records_every_field():
    _, ledger = _release(
        rng=np.random.default_rng(0), source="user statistic", clamping="y clamped to [0, 1]"
    )
    (event,) = ledger.events
    assert event.mechanism == "gaussian"
    assert event.statistic == "sums"
    assert event.source == "user statistic"
    assert event.clamping == "y clamped to [0, 1]"
    assert event.variables == ("y",)
    assert event.noise_backend == "numpy"
    assert event.sensitivity == 2.0
    assert event.noise_scale == pytest.approx(2.0 * 4.53, abs=0.02)
    _, ledger = _release(rng=np.random.default_rng(0))
    assert ledger.events[0].clamping == ""
    assert ledger.events[0].source == gaussian.GAUSSIAN_SOURCE


def test_gaussian_numpy_backend_adds_the_generators_noise():
    noisy, ledger = _release(rng=np.random.default_rng(5))
    scale = ledger.events[0].noise_scale
    expected = np.array([[3.0, 4.0], [5.0, 6.0]]) + np.random.default_rng(5).normal(
        0.0, scale, size=(2, 2)
    )
    np.testing.assert_array_equal(noisy, expected)
    assert noisy.dtype == np.float64


def test_gaussian_opendp_backend_draws_from_opendp(monkeypatch):
    # the calibration (cached) builds measurements of its own: compute it before the spy, so
    # that the test passes run alone as in the file (every mutmut run starts with no cache)
    _release(backend="opendp")
    calls = []
    real = gaussian._gaussian_measurement

    def spy(scale):
        calls.append(scale)
        return real(scale)

    monkeypatch.setattr(gaussian, "_gaussian_measurement", spy)
    monkeypatch.setattr(
        np.random, "default_rng", lambda *a: pytest.fail("the OpenDP backend used NumPy")
    )
    noisy, ledger = _release(backend="opendp")
    assert calls == [ledger.events[0].noise_scale]
    assert noisy.shape == (2, 2) and noisy.dtype == np.float64
    assert np.all(np.isfinite(noisy)) and not np.array_equal(noisy, [[3.0, 4.0], [5.0, 6.0]])


# --- the exponential mechanism and tight accounting -------------------------------------------
@pytest.mark.parametrize("delta", [0.0, 1.0, math.nan])
def test_gibbs_posterior_temperature_refuses_delta_outside_the_open_interval(delta):
    with pytest.raises(ValueError, match=r"^delta must satisfy 0 < delta < 1, got"):
        gibbs_posterior_inverse_temperature(1.0, delta, 1.0, 1.0)


@pytest.mark.parametrize("name", ["lipschitz", "strong_convexity"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.inf])
def test_gibbs_posterior_temperature_names_the_bad_constant(name, value):
    arguments = {"lipschitz": 1.0, "strong_convexity": 1.0, name: value}
    with pytest.raises(ValueError, match=rf"^{name} must be a finite number > 0"):
        gibbs_posterior_inverse_temperature(1.0, DELTA, **arguments)


@pytest.mark.parametrize("delta", [0.0, 1.0])
def test_tight_calibration_refuses_delta_outside_the_open_interval(delta):
    with pytest.raises(ValueError, match=r"0 < delta < 1 for tight accounting"):
        calibrate_temperature_tight(lambda t: [], 1.0, delta, basic_temperature=2.0)
    with pytest.raises(ValueError, match=r"0 < delta < 1 for tight accounting"):
        tight_release_epsilon(1.0, delta, 10)


@pytest.mark.parametrize("compositions", [2.5, True, 0, -3, "10"])
def test_tight_release_epsilon_refuses_non_integer_compositions(compositions):
    with pytest.raises(ValueError, match=r"^compositions must be an integer >= 1"):
        tight_release_epsilon(1.0, DELTA, compositions)


def _releases(epsilon0, k):
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


def test_tight_release_epsilon_meets_its_relative_precision():
    """rtol = 0 bisects to the last float (the loop's exit on a repeated midpoint); the
    default rtol = 1e-9 answer lies within 1e-9 of it, below it (it fits)."""
    exact = tight_release_epsilon(1.0, DELTA, 1000, rtol=0.0)
    assert isinstance(exact, float)
    assert epsilon_at([_releases(exact, 1000)], DELTA).epsilon <= 1.0 * (1 + 1e-12)
    assert epsilon_at([_releases(exact * (1 + 1e-9), 1000)], DELTA).epsilon > 1.0
    default = tight_release_epsilon(1.0, DELTA, 1000)
    assert exact * (1 - 1e-9) <= default <= exact


@pytest.mark.parametrize("basic_temperature", [0.5, math.nan, math.inf])
def test_tight_calibration_refuses_a_bad_basic_temperature(basic_temperature):
    with pytest.raises(ValueError, match=r"^basic_temperature must be finite and >= 1"):
        calibrate_temperature_tight(lambda t: [], 1.0, DELTA, basic_temperature=basic_temperature)


def test_tight_calibration_refuses_events_that_do_not_describe_the_epsilon():
    with pytest.raises(ValueError, match=r"compose to 2 > 1: they do not describe this ε"):
        calibrate_temperature_tight(
            lambda t: [_releases(2.0 / t, 1)], 1.0, DELTA, basic_temperature=1.0
        )


def test_tight_calibration_at_temperature_one_reports_every_field():
    """basic T = 1 (the releases already fit untempered): T = 1, and the result carries the
    basic temperature, target and δ it was asked for."""
    result = calibrate_temperature_tight(
        lambda t: [_releases(0.5 / t, 1)], 1.0, DELTA, basic_temperature=1.0
    )
    assert (result.temperature, result.basic_temperature) == (1.0, 1.0)
    assert (result.target_epsilon, result.delta) == (1.0, DELTA)
    assert 0.49 < result.epsilon <= 0.5 * (1 + 1e-12) and result.gain == 1.0
    result = calibrate_temperature_tight(
        lambda t: [_releases(0.5 / t, 1)], 1.0, DELTA, basic_temperature=4.0
    )
    assert (result.temperature, result.basic_temperature, result.target_epsilon) == (1.0, 4.0, 1.0)
    assert result.gain == 4.0


def test_tight_calibration_bisects_to_its_relative_precision():
    """k = 1000 releases of ε₀ = c/T, target ε = 1 at δ: the T returned fits and is within
    rtol of the lowest T that fits (tight_release_epsilon gives that one directly)."""
    k, c = 1000, 1.0
    lowest = c / tight_release_epsilon(1.0, DELTA, k, rtol=0.0)
    for rtol in (1e-3, 1e-6):
        result = calibrate_temperature_tight(
            lambda t: [_releases(c / t, k)], 1.0, DELTA, basic_temperature=c * k, rtol=rtol
        )
        assert lowest * (1 - 1e-9) <= result.temperature <= lowest * (1 + rtol) * (1 + 1e-9)
        assert result.epsilon <= 1.0 * (1 + 1e-12)


# --- the Laplace mechanism --------------------------------------------------------------------
def _laplace(backend="numpy", rng=None, **fields):
    ledger = PrivacyLedger()
    noisy = laplace.release_laplace(
        np.array([3.0, 4.0, 5.0]),
        sensitivity=2.0,
        epsilon=0.7,
        ledger=ledger,
        neighbouring="add-remove-one",
        variables=["y"],
        statistic="counts",
        backend=backend,
        rng=rng,
        **fields,
    )
    return noisy, ledger


def test_laplace_event_records_every_field_and_the_backends_own_scale():
    # OpenDP nudges this scale up by a few ulps; the NumPy backend's is exactly Δ/ε
    assert laplace.laplace_scale(2.0, 0.7, "opendp") > 2.0 / 0.7
    noisy, ledger = _laplace(rng=np.random.default_rng(3), clamping="y clamped to [0, 9]")
    (event,) = ledger.events
    assert event.noise_scale == 2.0 / 0.7
    assert event.clamping == "y clamped to [0, 9]"
    assert event.source == "Foulds et al. 2016, §3.2, eq. (16)-(17)"
    assert (event.mechanism, event.statistic, event.variables) == ("laplace", "counts", ("y",))
    assert (event.neighbouring, event.noise_backend) == ("add-remove-one", "numpy")
    expected = np.array([3.0, 4.0, 5.0]) + np.random.default_rng(3).laplace(0.0, 2.0 / 0.7, size=3)
    np.testing.assert_array_equal(noisy, expected)
    _, ledger = _laplace(rng=np.random.default_rng(3), source="user statistic")
    assert ledger.events[0].clamping == "" and ledger.events[0].source == "user statistic"


def test_laplace_opendp_backend_draws_from_opendp(monkeypatch):
    calls = []
    real = laplace._opendp_measurement

    def spy(scale):
        calls.append(scale)
        return real(scale)

    monkeypatch.setattr(laplace, "_opendp_measurement", spy)
    monkeypatch.setattr(
        np.random, "default_rng", lambda *a: pytest.fail("the OpenDP backend used NumPy")
    )
    noisy, ledger = _laplace(backend="opendp")
    assert ledger.events[0].noise_scale == laplace.laplace_scale(2.0, 0.7, "opendp")
    assert calls[-1] == ledger.events[0].noise_scale
    assert noisy.dtype == np.float64 and np.all(np.isfinite(noisy))


# --- the ledger ---------------------------------------------------------------------------
def test_remaining_without_a_budget_is_unbounded():
    assert PrivacyLedger().remaining() == (math.inf, 1.0)


def test_copy_keeps_budget_events_tight_flag_and_session():
    ledger = PrivacyLedger(budget=(3.0, 1e-5), tight_budget=True)
    _laplace_into(ledger)
    ledger.session = {"path": "budget.jsonl", "dataset_id": "stops"}
    copy = ledger.copy()
    assert copy.budget == (3.0, 1e-5) and copy.tight_budget
    assert copy.events == ledger.events and copy.session == ledger.session
    _laplace_into(copy)
    assert len(copy) == 2 and len(ledger) == 1  # a copy, not a view


def _laplace_into(ledger):
    laplace.release_laplace(
        np.array([1.0]),
        sensitivity=1.0,
        epsilon=1.0,
        ledger=ledger,
        neighbouring="replace-one",
        variables=["y"],
        statistic="count",
        backend="numpy",
        rng=np.random.default_rng(0),
    )


def test_laplace_scale_names_the_bad_argument_and_is_exact_where_opendp_certifies_it():
    with pytest.raises(ValueError, match=r"^sensitivity must be a finite number > 0"):
        laplace.laplace_scale(0.0, 1.0)
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number > 0"):
        laplace.laplace_scale(1.0, -1.0)
    # OpenDP's map at b = Δ/ε = 1 is exactly ε = 1: certified as is, not nudged
    assert laplace._opendp_measurement(1.0).map(1.0) == 1.0
    assert laplace.laplace_scale(1.0, 1.0, "opendp") == 1.0


@pytest.mark.parametrize("backend", ["numpy", "opendp"])
def test_integer_statistics_are_released_as_floats(backend):
    ledger = PrivacyLedger()
    noisy = laplace.release_laplace(
        np.array([1, 2, 3]),
        sensitivity=1.0,
        epsilon=1.0,
        ledger=ledger,
        neighbouring="replace-one",
        variables=["y"],
        statistic="counts",
        backend=backend,
    )
    assert noisy.dtype == np.float64 and noisy.shape == (3,) and len(ledger) == 1
    assert not np.array_equal(noisy, [1.0, 2.0, 3.0])  # fresh noise without an rng


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (
            {"values": np.array([1.0, np.nan])},
            r"^statistic of y contains NaN .*nothing was released",
        ),
        (
            {"backend": "opendp", "rng": np.random.default_rng(0)},
            r"^rng is only used by the numpy backend; OpenDP draws its own noise$",
        ),
        (
            {"rng": 5},
            r"^rng must be a numpy.random.Generator or None, got int; nothing was released$",
        ),
        ({"backend": "gpu"}, r"^backend must be one of"),
        (
            {"values": np.array(["secret-7", "3.25"])},
            r"^statistic of y must be numbers, got an array of dtype 'U'; nothing was released$",
        ),
    ],
)
def test_bad_release_inputs_are_refused_before_any_charge(fields, match):
    from pymc_dp import InvalidPrivateDataError

    ledger = PrivacyLedger()
    arguments = {
        "values": np.array([1.0, 2.0]),
        "sensitivity": 1.0,
        "epsilon": 1.0,
        "ledger": ledger,
        "neighbouring": "replace-one",
        "variables": ["y"],
        "statistic": "counts",
        "backend": "numpy",
        **fields,
    }
    error = InvalidPrivateDataError if "values" in fields else ValueError
    for release in (laplace.release_laplace, gaussian.release_gaussian):
        extra = {"delta": DELTA} if release is gaussian.release_gaussian else {}
        with pytest.raises(error, match=match):
            release(**arguments, **extra)
        assert len(ledger) == 0


def test_check_all_counts_the_deltas_too():
    ledger = PrivacyLedger(budget=(10.0, 1e-6))
    ledger.check_all([(1.0, 4e-7), (1.0, 5e-7)])  # fits: 2, 9e-7
    with pytest.raises(BudgetExceededError, match=r"delta"):
        ledger.check_all([(1.0, 6e-7), (1.0, 6e-7)])  # ε fits, δ = 1.2e-6 does not
    assert len(ledger) == 0


def test_gaussian_delta_refusal_says_why_under_the_callers_name():
    with pytest.raises(
        ValueError,
        match=(
            r"^route_delta must satisfy 0 < route_delta < 1 for the Gaussian mechanism \(it is "
            r"never \(ε, 0\)-DP: give e.g. route_delta=1e-6, well below 1/n; nothing was "
            r"released\), got 0.0$"
        ),
    ):
        gaussian.validate_gaussian_delta(0.0, "route_delta")


def test_gaussian_numpy_backend_without_an_rng_draws_fresh_noise():
    noisy, _ = _release(rng=None)
    again, _ = _release(rng=None)
    assert noisy.dtype == np.float64 and not np.array_equal(noisy, again)


def test_split_epsilon_names_missing_and_extra_releases():
    from pymc_dp.ledger import split_epsilon

    assert split_epsilon(1.0, ["a", "b"]) == {"a": 0.5, "b": 0.5}
    with pytest.raises(ValueError, match=r"\['c'\]"):
        split_epsilon({"a": 0.5, "b": 0.5, "c": 0.1}, ["a", "b"])
    with pytest.raises(ValueError, match=r"\['b'\]"):
        split_epsilon({"a": 0.5}, ["a", "b"])


def test_calibrate_temperature_names_a_bad_cost():
    from pymc_dp.mechanisms.exponential import calibrate_temperature

    with pytest.raises(
        ValueError, match=r"^the cost of one release at T = 1 must be a finite number >= 0"
    ):
        calibrate_temperature(-1.0, 1.0)


def test_tight_calibration_with_rtol_zero_bisects_to_the_last_float():
    k, c = 1000, 1.0
    result = calibrate_temperature_tight(
        lambda t: [_releases(c / t, k)], 1.0, DELTA, basic_temperature=c * k, rtol=0.0
    )
    assert isinstance(result.temperature, float)
    lowest = c / tight_release_epsilon(1.0, DELTA, k, rtol=0.0)
    assert result.temperature == pytest.approx(lowest, rel=1e-9)


@pytest.mark.parametrize("release", ["release_ehd", "release_ehds"])
@pytest.mark.parametrize("rng", [42, "x", np.random.RandomState(0)])
def test_dirichlet_exponential_releases_refuse_a_bad_rng_before_charging(release, rng):
    from pymc_dp.mechanisms import dirichlet

    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(ValueError, match=r"^rng must be a numpy.random.Generator or None"):
        getattr(dirichlet, release)([1, 2, 3], [1.0, 1.0, 1.0], epsilon=1.0, ledger=ledger, rng=rng)
    assert len(ledger) == 0


def _truncated_bernoulli_model():
    import pymc as pm

    from pymc_dp.distributions import TruncatedBeta

    with pm.Model() as model:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1]))
    return model


@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential", "metropolis"])
@pytest.mark.parametrize("option", ["callback", "trace"])
def test_routes_that_sample_the_records_refuse_callbacks_and_trace_backends(mechanism, option):
    """A callback or a custom backend sees every draw while the run samples, also draws the
    run does not release (found by the adversarial review)."""
    from pymc.backends.ndarray import NDArray

    import pymc_dp

    ledger = PrivacyLedger()
    model = _truncated_bernoulli_model()
    with pytest.raises(ValueError, match=rf"^{option!r} would see every draw computed from"):
        pymc_dp.sample(
            draws=5,
            model=model,
            epsilon=1.0,
            mechanism=mechanism,
            ledger=ledger,
            **{option: print if option == "callback" else NDArray(model=model)},
        )
    assert len(ledger) == 0


def _interrupt_pm_sample(monkeypatch, ledger) -> list[int]:
    """Make ``pm.sample`` raise KeyboardInterrupt at its start (keeping the signature that
    pymc_dp checks options against); returns the ledger's length at each call."""
    import pymc as pm

    seen: list[int] = []

    @functools.wraps(pm.sample)
    def interrupted(*args, **kwargs):
        seen.append(len(ledger))
        raise KeyboardInterrupt

    monkeypatch.setattr(pm, "sample", interrupted)  # with nutpie off every route calls pm.sample

    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    return seen


@pytest.mark.parametrize(
    ("mechanism", "options"),
    [
        ("ops", {}),
        ("ops", {"release": "chain"}),
        ("gibbs-exponential", {"tune": 5}),
        ("metropolis", {"tune": 5, "proposal_scale": 0.1}),
    ],
)
def test_posterior_sampling_routes_charge_before_they_sample(monkeypatch, mechanism, options):
    """Order: record the event, then sample. An exception raised inside ``pm.sample`` (an
    interrupt, a failing option) finds the run already charged, so draws of the private
    records can never have been computed uncharged."""
    import pymc_dp

    ledger = PrivacyLedger()
    seen = _interrupt_pm_sample(monkeypatch, ledger)
    with pytest.raises(KeyboardInterrupt):
        pymc_dp.sample(
            draws=5,
            model=_truncated_bernoulli_model(),
            epsilon=1.0,
            mechanism=mechanism,
            ledger=ledger,
            progressbar=False,
            **options,
        )
    assert seen == [1]
    assert len(ledger) == 1 and ledger.events[0].mechanism == mechanism


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_hmm_posterior_sampling_routes_charge_before_they_sample(monkeypatch, mechanism):
    import pymc_dp
    from pymc_dp.hmm import cell_counts
    from pymc_dp.models import naive_bayes_hmm

    rng = np.random.default_rng(0)
    counts = cell_counts(
        rng.integers(0, 2, size=40),
        rng.integers(0, 3, size=40),
        rng.integers(0, 2, size=(40, 1)),
        regions=["r0", "r1"],
        times=["t0", "t1", "t2"],
        features=["f"],
        categories=[["a", "b"]],
    )
    ledger = PrivacyLedger()
    seen = _interrupt_pm_sample(monkeypatch, ledger)
    with naive_bayes_hmm(counts, 2, truncation=20.0), pytest.raises(KeyboardInterrupt):
        pymc_dp.sample(
            draws=5, epsilon=1.0, mechanism=mechanism, ledger=ledger, tune=5, progressbar=False
        )
    assert seen and seen[0] >= 1
    assert len(ledger) == seen[0]


@pytest.mark.parametrize(
    ("counts", "match"),
    [
        ([1e300, 1, 1], r"hold more than 2\*\*53 records; nothing was released$"),
        (["7", "1", "3"], r"are not numeric; nothing was released$"),
    ],
)
@pytest.mark.parametrize("release", ["release_ehd", "release_lshist", "release_lsdim"])
def test_dirichlet_releases_refuse_huge_or_text_counts_before_charging(counts, match, release):
    from pymc_dp import InvalidPrivateDataError
    from pymc_dp.mechanisms import dirichlet

    ledger = PrivacyLedger()
    options = {} if release == "release_ehd" else {"backend": "numpy"}
    with pytest.raises(InvalidPrivateDataError, match=match) as refused:
        getattr(dirichlet, release)(counts, [1.0, 1.0, 1.0], epsilon=1.0, ledger=ledger, **options)
    assert "300" not in str(refused.value) and "7" not in str(refused.value)
    assert len(ledger) == 0


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ({"return_inferencedata": 0}, "always returns a DataTree"),
        ({"return_inferencedata": None}, "always returns a DataTree"),
        ({"mp_ctx": "nonsense"}, "mp_ctx must be one of"),
        ({"blas_cores": "lots"}, "blas_cores must be"),
        ({"compile_kwargs": {"mode": "NOPE"}}, "not a PyTensor mode"),
        ({"initvals": [{}, {}, {}], "chains": 1}, "initvals has 3 dicts for 1 chains"),
        ({"var_names": []}, "var_names is empty"),
        ({"trace": "not a backend"}, "trace must be None or a PyMC trace backend"),
        ({"proposal_scale": 0.0}, "proposal_scale must be finite and > 0"),
        ({"proposal_scale": math.nan}, "proposal_scale must be finite and > 0"),
        ({"proposal_scale": True}, "proposal_scale must be one real number"),
        ({"proposal_scale": np.ones(2)}, "proposal_scale must be one real number"),
    ],
)
def test_options_that_would_fail_inside_pm_sample_are_refused_before_the_charge(option, match):
    """The posterior-sampling routes charge before ``pm.sample`` (so an exception while
    sampling never leaves draws uncharged); an option PyMC would reject only once sampling
    starts would then cost ε for nothing, and ``return_inferencedata=0`` made ``pm.sample``
    return a MultiTrace whose unreleased draws sat in the traceback of the resulting error
    (found by the adversarial review). Every such option is refused first."""
    import pymc_dp

    mechanism = "metropolis" if "proposal_scale" in option else "ops"
    if mechanism == "metropolis" or "trace" in option:
        mechanism = "metropolis" if mechanism == "metropolis" else "laplace"
    options = dict(option)
    if mechanism == "metropolis":
        options.setdefault("tune", 5)
    ledger = PrivacyLedger()
    model = _truncated_bernoulli_model()
    if mechanism == "laplace":
        import pymc as pm

        with pm.Model() as model:
            p = pm.Beta("p", 1.0, 1.0)
            pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1]))
    with pytest.raises(ValueError, match=match):
        pymc_dp.sample(
            draws=5,
            model=model,
            epsilon=1.0,
            mechanism=mechanism,
            ledger=ledger,
            progressbar=False,
            **options,
        )
    assert len(ledger) == 0


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["ops", "metropolis"])
def test_a_last_draw_route_that_fails_after_sampling_leaves_no_draws_in_the_traceback(mechanism):
    """A bad ``idata_kwargs`` coordinate fails when PyMC converts the chain, after sampling:
    the caller who catches the error must not find the unreleased chain in the frames of its
    traceback (found by the adversarial review with ``return_inferencedata=0``)."""
    import pymc as pm

    import pymc_dp

    options = {"proposal_scale": 0.1, "tune": 5} if mechanism == "metropolis" else {"tune": 5}
    with pm.Model() as model:  # a hyperprior: OPS samples a chain (MCMC) and keeps its last draw
        a = pm.HalfNormal("a", 2.0)
        p = pm.Truncated("p", pm.Beta.dist(a + 1.0, 1.0), lower=0.1, upper=0.9)
        pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1]))
    ledger = PrivacyLedger()
    with pytest.raises(Exception) as raised:  # PyMC's own conversion error
        pymc_dp.sample(
            draws=50,
            model=model,
            epsilon=1.0,
            mechanism=mechanism,
            ledger=ledger,
            progressbar=False,
            idata_kwargs={"dims": {"p": ["nowhere"]}, "coords": {"nowhere": [0, 1, 2]}},
            **options,
        )
    assert len(ledger) == 1  # charged before sampling
    found = []
    tb = raised.value.__traceback__
    while tb is not None:
        for name, value in tb.tb_frame.f_locals.items():
            kind = type(value).__name__
            draws = len(value) if kind == "MultiTrace" else 0
            if kind == "DataTree" and "posterior" in value.children:
                draws = value["posterior"].sizes.get("draw", 0)
            if draws > 1:
                found.append((tb.tb_frame.f_code.co_name, name))
        tb = tb.tb_next
    assert found == []


# --- found by mutation re-run 5 (docs/mutation_testing.md) ---------------------------------
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
