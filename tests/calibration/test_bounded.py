"""The bounded families' calibration study: releases as the route makes them, two samplers of
one posterior, and coverage that can fail."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_dp.calibration import coverage_rows
from pymc_dp.calibration.bounded import (
    CASES,
    _private_model,
    _release_values,
    bounded_study,
    posterior_intervals,
)


@pytest.mark.parametrize("family", sorted(CASES))
def test_cases_simulate_from_the_prior_inside_the_declared_bounds(family):
    case = CASES[family]
    rng = np.random.default_rng(0)
    truth, y, X = case.simulate(200, rng)
    assert set(truth) == set(case.scored)
    low, high = case.data_bounds["y_obs"]
    assert y.shape == (200,) and low <= y.min() and y.max() <= high
    if X is not None:
        assert X.shape == (200, 2) and np.abs(X).max() <= case.data_bounds["X"][1]


def test_study_releases_what_the_route_releases():
    # Normal, replace-one: weighted (0.3 Σu, 2.8 Σu²) released with Δ = 3.1²/11.2; n public
    case = CASES["normal"]
    private, link = _private_model(case, 40, 0.5, "noise-aware", "replace-one")
    _, y, X = case.simulate(40, np.random.default_rng(1))
    values = _release_values(private, link, y, X, 0.5, "replace-one", np.random.default_rng(2))
    assert values["y_obs_noise_scale"] == pytest.approx(3.1**2 / 11.2 / 0.5)
    assert values["y_obs_public_n"].tolist() == [40.0]
    assert values["y_obs_released_statistics"].shape == (1, 2)


@pytest.mark.integration
def test_jax_and_pymc_sample_the_same_posterior():
    # The same model.logp(), two NUTS implementations: with 1,000 draws the 5% and 95%
    # quantiles differ by Monte Carlo error only (≈ 0.1 posterior sd; the interval is 3.3 sd).
    case = CASES["normal"]
    private, link = _private_model(case, 30, 1.0, "noise-aware", "replace-one")
    rng = np.random.default_rng(3)
    datasets = [
        _release_values(private, link, *case.simulate(30, rng)[1:], 1.0, "replace-one", rng)
        for _ in range(3)
    ]
    options = {"target_accept": 0.95}
    pymc = posterior_intervals(private, datasets, ["mu"], rng, sampler="pymc", **options)
    jax = posterior_intervals(private, datasets, ["mu"], rng, sampler="jax", **options)
    width = pymc["mu"][:, 1] - pymc["mu"][:, 0]
    assert np.all(np.abs(pymc["mu"] - jax["mu"]) < 0.15 * width[:, None])


@pytest.mark.integration
@pytest.mark.parametrize("sampler", ["pymc", "jax"])
def test_each_data_set_gets_its_own_random_numbers(sampler):
    """Two identical data sets sampled in one call must not get identical draws: a
    Generator passed to ``pm.sample`` as ``random_seed`` is copied, not advanced, so reusing
    it gave every data set of a cell the same random numbers (their Monte Carlo errors then
    add up instead of averaging out: the Poisson noise-aware cell at n = 10, ε = 0.1, where
    every posterior is nearly the prior, read 0.867 instead of 0.9)."""
    case = CASES["normal"]
    private, link = _private_model(case, 30, 1.0, "noise-aware", "replace-one")
    rng = np.random.default_rng(5)
    values = _release_values(private, link, *case.simulate(30, rng)[1:], 1.0, "replace-one", rng)
    out = posterior_intervals(
        private, [values, values], ["mu"], rng, sampler=sampler, draws=100, tune=100
    )["mu"]
    assert not np.allclose(out[0], out[1])


@pytest.mark.integration
def test_data_dependent_shapes_fall_back_to_pymc():
    # The Poisson noise-aware marginal sums over a window computed from the release: PyTensor
    # cannot compile it to JAX, so the study samples it with PyMC's NUTS.
    out = list(
        bounded_study(
            "poisson",
            20,
            1.0,
            2,
            np.random.default_rng(4),
            ["noise-aware"],
            0.9,
            "replace-one",
            sampler="jax",
        )
    )
    ((parameter, method, truth, intervals),) = out
    assert (parameter, method) == ("rate λ", "noise-aware")
    assert truth.shape == (2,) and intervals.shape == (2, 2)
    assert np.all(intervals[:, 0] < intervals[:, 1])


@pytest.mark.integration
def test_regression_study_scores_intercept_and_each_slope():
    rows = coverage_rows("linear-regression", 50, 1.0, 3, np.random.default_rng(5))
    assert {(r["parameter"], r["method"]) for r in rows} == {
        (p, m)
        for p in ("intercept α", "slopes β (pooled)")
        for m in ("non-private", "plugin", "noise-aware")
    }
    assert all(r["n_datasets"] == 3 for r in rows)


@pytest.mark.slow  # about 100 s: run by .ci/run's second pytest call
def test_noise_aware_sd_is_calibrated_where_plugin_fails():
    # Normal, n = 100, ε = 1: the plug-in sd ignores the noise in Σu² and covers ≈ 0.1
    # (docs/calibration.md). 300 data sets: SE(0.9) = 0.017; noise-aware band ±4 SE.
    rows = coverage_rows(
        "normal", 100, 1.0, 300, np.random.default_rng(6), methods=["plugin", "noise-aware"]
    )
    coverage = {(r["parameter"], r["method"]): r["coverage"] for r in rows}
    tolerance = 4 * np.sqrt(0.09 / 300)
    assert abs(coverage["sd σ", "noise-aware"] - 0.9) < tolerance
    assert abs(coverage["mean μ", "noise-aware"] - 0.9) < tolerance
    assert coverage["sd σ", "plugin"] < 0.5
