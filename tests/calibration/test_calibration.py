"""The calibration study: releases as the route makes them, and coverage that can fail."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_dp.calibration import coverage_rows, coverage_table, simulate_counts
from pymc_dp.calibration.plots import plot_calibration


@pytest.mark.parametrize(
    ("family", "neighbouring", "released", "sensitivity", "public"),
    [
        ("beta-bernoulli", "replace-one", 1, 1.0, True),  # one count, n public
        ("beta-bernoulli", "add-remove-one", 2, 1.0, False),
        ("dirichlet-categorical", "replace-one", 3, 2.0, True),  # a record moves between cells
        ("dirichlet-categorical", "add-remove-one", 3, 1.0, False),
    ],
)
def test_studies_release_what_the_route_releases(
    family, neighbouring, released, sensitivity, public
):
    study = simulate_counts(family, 50, 0.5, 7, np.random.default_rng(0), neighbouring=neighbouring)
    assert study.noisy.shape == (7, released)
    assert study.scale == pytest.approx(sensitivity / 0.5)
    assert (study.public_total == 50) if public else study.public_total is None
    assert np.all(study.counts.sum(axis=1) == 50)


def _coverage(rows, method):
    (row,) = [r for r in rows if r["method"] == method]
    return row["coverage"], row["coverage_se"]


def test_exact_posterior_covers_at_the_nominal_rate():
    # θ ~ prior, so the exact posterior's 90% interval covers with probability 0.9 exactly
    # (Cook, Gelman & Rubin 2006); 2,000 intervals: SE = √(0.09/2000) = 0.0067, ±4 SE.
    rows = coverage_rows(
        "beta-bernoulli", 10, 0.1, 2000, np.random.default_rng(1), methods=["non-private"]
    )
    coverage, _ = _coverage(rows, "non-private")
    assert abs(coverage - 0.9) < 4 * np.sqrt(0.09 / 2000)


def test_noise_aware_is_calibrated_where_plugin_fails():
    # n = 10, ε = 0.1: the Laplace noise (scale 10) exceeds the data; plug-in covers ≈ 0.38
    # (docs/calibration.md). 600 data sets: SE(0.9) = 0.012; the noise-aware band is ±4 SE.
    rows = coverage_rows("beta-bernoulli", 10, 0.1, 600, np.random.default_rng(2))
    aware, _ = _coverage(rows, "noise-aware")
    plugin, _ = _coverage(rows, "plugin")
    assert abs(aware - 0.9) < 4 * np.sqrt(0.09 / 600)
    assert plugin < 0.6
    widths = {r["method"]: r["mean_width"] for r in rows}
    assert widths["noise-aware"] > 2 * widths["plugin"]


@pytest.mark.integration
def test_table_rows_and_figure():
    table = coverage_table(
        ["beta-bernoulli", "dirichlet-categorical"], ns=[10], epsilons=[1.0], n_datasets=20
    )
    assert len(table) == 2 * 3  # families × methods
    assert set(table["parameter"]) == {"p", "p[k] (pooled)"}
    figure = plot_calibration(table)
    assert len(figure.axes) == 2  # one row per family, one column per ε
    with pytest.raises(ValueError, match="family must be one of"):
        coverage_rows("gamma-poisson", 10, 1.0, 5, np.random.default_rng(0))
