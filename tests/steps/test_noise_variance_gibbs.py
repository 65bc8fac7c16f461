"""NoiseVarianceGibbs: its update leaves p(V | θ, release) invariant; it runs on its own."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from pymc_dp.steps.noise_variance_gibbs import draw_noise_variances


def _posterior_of_one_variance(mean, variance_clt, released, scale):
    """p(V | y) ∝ Exp(V; mean 2b²) · N(y; m, C + V), r = 1, normalised by quadrature."""

    def density(v):
        return stats.expon(scale=2 * scale**2).pdf(v) * stats.norm(
            mean, np.sqrt(variance_clt + v)
        ).pdf(released)

    total, _ = integrate.quad(density, 0, np.inf)
    return lambda v: density(v) / total


@pytest.mark.parametrize(
    "mean, variance_clt, released, scale",
    [(10.0, 4.0, 13.0, 2.0), (10.0, 0.01, 10.5, 3.0), (0.0, 25.0, -1.0, 0.5)],
)
def test_one_update_keeps_the_exact_conditional_of_one_variance(
    mean, variance_clt, released, scale
):
    """Start 4,000 independent chains at exact draws of p(V | y) (inverse CDF on a grid),
    apply one update each; the updated values follow p(V | y) too (KS at α = 0.001)."""
    rng = np.random.default_rng(7)
    pdf = _posterior_of_one_variance(mean, variance_clt, released, scale)
    grid = np.concatenate([[0.0], np.geomspace(1e-8, 200 * scale**2, 20_000)])
    cdf = np.concatenate([[0.0], np.cumsum(np.diff(grid) * 0.5 * (pdf(grid[1:]) + pdf(grid[:-1])))])
    cdf /= cdf[-1]
    start = np.interp(rng.uniform(size=4_000), cdf, grid)
    updated = np.array(
        [
            draw_noise_variances(
                rng,
                np.array([mean]),
                np.array([[variance_clt]]),
                np.array([released]),
                scale,
                np.array([v]),
            )[0]
            for v in start
        ]
    )
    assert stats.kstest(start, lambda v: np.interp(v, grid, cdf)).pvalue > 1e-3  # the start
    assert stats.kstest(updated, lambda v: np.interp(v, grid, cdf)).pvalue > 1e-3
    # and the update moves: it is not the identity
    assert np.mean(updated == start) == 0.0


def test_the_chain_of_updates_matches_the_conditional_means_of_two_correlated_variances():
    """r = 2, C nearly singular (a small σ): E[V_j | y] by the chain against a 2-D grid;
    tolerance 5 batch-means standard errors."""
    rng = np.random.default_rng(3)
    mean = np.array([500.0, 260.0])
    s, m, n = 0.04, 0.5, 1000.0
    cov = n * np.array([[s**2, 2 * m * s**2], [2 * m * s**2, 4 * m**2 * s**2 + 2 * s**4]])
    released, scale = np.array([503.0, 258.0]), 2.0

    # p(V | y) on a grid (trapezoid in each direction), the Gaussian density in closed form
    grid = np.concatenate([[0.0], np.geomspace(1e-6, 40 * scale**2, 600)])
    v1, v2 = np.meshgrid(grid, grid, indexing="ij")
    a, c = cov[0, 0] + v1, cov[1, 1] + v2
    det = a * c - cov[0, 1] ** 2
    d1, d2 = released - mean
    quad = (c * d1**2 - 2 * cov[0, 1] * d1 * d2 + a * d2**2) / det
    density = np.exp(-(v1 + v2) / (2 * scale**2) - 0.5 * quad) / np.sqrt(det)
    weights = np.gradient(grid)
    mass = weights[:, None] * weights[None, :] * density
    expected = [np.sum(v1 * mass) / mass.sum(), np.sum(v2 * mass) / mass.sum()]
    draws = np.empty((20_000, 2))
    v = np.array([1.0, 1.0])
    for i in range(draws.shape[0]):
        v = draw_noise_variances(rng, mean, cov, released, scale, v)
        draws[i] = v
    batches = draws.reshape(40, -1, 2).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(40)
    assert np.all(np.abs(draws.mean(axis=0) - expected) < 5 * se)


# --- on the route ------------------------------------------------------------------------

import functools  # noqa: E402

import arviz as az  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_dp  # noqa: E402
from pymc_dp.families.normal import NormalFamily  # noqa: E402
from pymc_dp.routes import compiled  # noqa: E402
from pymc_dp.routes import laplace as laplace_route  # noqa: E402
from pymc_dp.steps.noise_variance_gibbs import NoiseVarianceGibbs  # noqa: E402


def _normal_model(values):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=values)
    return model


def _run(values, seed, draws, **options):
    with _normal_model(values):
        return pymc_dp.sample(
            draws,
            tune=draws,
            chains=4,
            cores=1,
            epsilon=1.0,
            data_bounds={"y": (-12.0, 12.0)},
            random_seed=seed,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(seed),
            progressbar=False,
            compute_convergence_checks=False,
            **options,
        )


@pytest.mark.integration
def test_the_default_route_moves_the_normal_noise_variances_by_gibbs(monkeypatch):
    """The step the Normal family's noise-aware run hands ``pm.sample``: a NoiseVarianceGibbs
    over ``y_noise_variance`` (NUTS gets the rest); the regression family keeps joint NUTS."""
    seen = []
    original = laplace_route.pm.sample

    @functools.wraps(original)  # pymc_dp.sample reads pm.sample's signature
    def spy(*args, step=None, **kwargs):
        seen.append(step)
        return original(*args, step=step, **kwargs)

    monkeypatch.setattr(laplace_route.pm, "sample", spy)
    values = np.random.default_rng(0).normal(0.3, 0.8, 500)
    _run(values, 1, 50)
    [steps] = seen
    assert [type(s) for s in steps] == [NoiseVarianceGibbs]
    assert [v.name for v in steps[0].vars] == ["y_noise_variance_log__"]


@pytest.mark.integration
def test_gibbs_noise_variances_sample_the_posterior_joint_nuts_samples(monkeypatch):
    """One release (the same noise generator), two samplers of p(μ, σ | release): the default
    (V by Gibbs) and joint NUTS at target_accept 0.99. Posterior means agree within 4 Monte
    Carlo standard errors (ArviZ's mcse of both) and sds within 10%."""
    values = np.random.default_rng(2).normal(0.3, 0.8, 1_000)
    gibbs = _run(values, 4, 1_500)
    compiled.clear_compiled_models()  # the kept model carries the Gibbs marks
    monkeypatch.setattr(NormalFamily, "gibbs_noise_variances", False)
    joint = _run(values, 4, 1_500, target_accept=0.99)
    compiled.clear_compiled_models()
    released = [t["released_statistics"]["y"].values for t in (gibbs, joint)]
    np.testing.assert_array_equal(*released)  # the same release
    for name in ("mu", "sigma"):
        a, b = gibbs["posterior"][name], joint["posterior"][name]
        se = np.hypot(*(float(az.mcse(x.to_dataset())[name]) for x in (a, b)))
        assert abs(float(a.mean()) - float(b.mean())) < 4 * se, name
        assert float(a.std()) == pytest.approx(float(b.std()), rel=0.10), name
