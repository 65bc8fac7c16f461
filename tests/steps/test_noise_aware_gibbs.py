"""NoiseAwareConjugateGibbs through pymc_dp.sample: the same release and ledger event as the
plug-in route, posteriors against closed forms computed on a θ grid, hyperpriors, shared
priors, and the refusal to run without releases."""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import betaln, logsumexp

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger, PrivateConjugateGibbs
from pymc_dp.steps.noise_aware_gibbs import NoiseAwareConjugateGibbs

FAST = {"tune": 50, "chains": 2, "cores": 1, "progressbar": False}
THETA = np.linspace(0, 1, 20_001)[1:-1]


def numpy_noise(seed=1):
    return {"noise_backend": "numpy", "noise_rng": np.random.default_rng(seed)}


def _release_log_likelihood(noisy, scale, total):
    """log p(s̃ | θ) on THETA: Σ_s Binomial(s; T, θ) · Laplace(s̃ − s; b) (exact)."""
    s = np.arange(total + 1)
    log_binomial = stats.binom.logpmf(s[None, :], total, THETA[:, None])
    return logsumexp(log_binomial - np.abs(noisy - s)[None, :] / scale, axis=1)


def _grid_moments(log_posterior):
    w = np.exp(log_posterior - log_posterior.max())
    w /= w.sum()
    mean = float(np.sum(w * THETA))
    return mean, float(math.sqrt(np.sum(w * (THETA - mean) ** 2)))


def _assert_matches(draws, mean, sd):
    """Mean within 4 Monte Carlo standard errors (sd/√ESS, ESS from arviz), sd within 10 %
    (the sd of a sample sd is ≈ sd/√(2·ESS) < 2.5 % for ESS > 800)."""
    ess = float(az.ess(draws))
    assert ess > 800
    values = np.asarray(draws).ravel()
    assert abs(values.mean() - mean) < 4 * sd / math.sqrt(ess)
    assert values.std() == pytest.approx(sd, rel=0.10)


def _bernoulli_model(y, alpha=1.0, beta=1.0):
    model = pm.Model()
    with model:
        p = pm.Beta("p", alpha, beta)
        pm.Bernoulli("y", p=p, observed=y)
    return model


Y10 = np.r_[np.ones(3, int), np.zeros(7, int)]


def test_noise_aware_posterior_is_the_exact_posterior_given_the_release():
    with _bernoulli_model(Y10, 2.0, 1.5):
        idata = pymc_dp.sample(2000, epsilon=0.5, inference="noise-aware", **numpy_noise(), **FAST)
    released = idata["released_statistics"]
    assert released.attrs["inference"] == "noise-aware"
    [event] = PrivacyLedger.from_datatree(idata).events
    noisy = float(released["y"].values[0, 0])
    log_post = stats.beta.logpdf(THETA, 2.0, 1.5) + _release_log_likelihood(
        noisy, event.noise_scale, 10
    )
    _assert_matches(idata.posterior["p"], *_grid_moments(log_post))


def test_same_release_and_ledger_event_as_plugin_and_nothing_new():
    traces = {}
    for inference in ("plugin", "noise-aware"):
        with _bernoulli_model(Y10):
            traces[inference] = pymc_dp.sample(
                200, epsilon=0.1, inference=inference, **numpy_noise(7), **FAST
            )
    events = {k: PrivacyLedger.from_datatree(v).events for k, v in traces.items()}
    assert len(events["plugin"]) == len(events["noise-aware"]) == 1

    def content(event):
        return {k: v for k, v in event.to_dict().items() if k != "time"}

    assert content(events["plugin"][0]) == content(events["noise-aware"][0])
    np.testing.assert_array_equal(
        traces["plugin"]["released_statistics"]["y"],
        traces["noise-aware"]["released_statistics"]["y"],
    )
    assert traces["plugin"]["released_statistics"].attrs["inference"] == "plugin"
    # at n = 10, ε = 0.1 (b = 10) the release says little: the noise-aware posterior stays
    # near the Beta(1, 1) prior (sd 0.29), the plug-in one is Beta(1 + ŝ, 1 + 10 − ŝ) (sd ≤ 0.15)
    assert float(traces["noise-aware"].posterior["p"].std()) > 0.2
    assert float(traces["plugin"].posterior["p"].std()) < 0.16


def test_plugin_inference_is_unchanged_and_noise_aware_is_the_default():
    with _bernoulli_model(Y10):
        idata = pymc_dp.sample(2000, epsilon=1.0, inference="plugin", **numpy_noise(3), **FAST)
    assert idata["released_statistics"].attrs["inference"] == "plugin"
    table = idata["released_statistics"]["y_projected"].values[0]
    exact = stats.beta(1 + table[0], 1 + table[1])
    _assert_matches(idata.posterior["p"], exact.mean(), exact.std())
    with _bernoulli_model(Y10):
        default = pymc_dp.sample(2000, epsilon=1.0, **numpy_noise(3), **FAST)
    assert default["released_statistics"].attrs["inference"] == "noise-aware"
    noisy = float(default["released_statistics"]["y"].values[0, 0])
    log_post = _release_log_likelihood(noisy, 1.0, 10)  # b = sensitivity 1 / ε 1
    _assert_matches(default.posterior["p"], *_grid_moments(log_post))


def test_prebuilt_plugin_step_is_read_noise_aware_without_a_new_release():
    ledger = PrivacyLedger()
    with _bernoulli_model(Y10) as model:
        step = PrivateConjugateGibbs([model["p"]], epsilon=0.5, ledger=ledger, **numpy_noise(5))
        idata = pymc_dp.sample(2000, step=step, inference="noise-aware", **FAST)
    events = PrivacyLedger.from_datatree(idata).events
    assert len(ledger) == 1  # the step's release, charged once when it was built
    assert [e.to_dict() for e in events] == [e.to_dict() for e in step.events]
    [release] = step.releases
    log_post = _release_log_likelihood(float(release.noisy[0, 0]), release.scale, 10)
    _assert_matches(idata.posterior["p"], *_grid_moments(log_post))


@pytest.mark.integration
def test_two_releases_sharing_one_prior():
    y1 = Y10
    y2 = np.array([1, 4, 0, 2, 5, 3, 2, 1])  # Binomial(5, p): total 40 trials, public
    with pm.Model():
        p = pm.Beta("p", 1.5, 1.5)
        pm.Bernoulli("y1", p=p, observed=y1)
        pm.Binomial("y2", n=5, p=p, observed=y2)
        idata = pymc_dp.sample(
            1500, epsilon={"y1": 0.5, "y2": 0.5}, inference="noise-aware", **numpy_noise(9), **FAST
        )
    events = {e.variables[0]: e for e in PrivacyLedger.from_datatree(idata).events}
    released = idata["released_statistics"]
    log_post = stats.beta.logpdf(THETA, 1.5, 1.5)
    for name, total in (("y1", 10), ("y2", 40)):
        noisy = float(released[name].values[0, 0])
        log_post = log_post + _release_log_likelihood(noisy, events[name].noise_scale, total)
    _assert_matches(idata.posterior["p"], *_grid_moments(log_post))


def _hyperprior_log_marginal():
    """log p(θ) on THETA for a, b ~ Gamma(2, 1), θ | a, b ~ Beta(a, b): a 200 × 200 grid
    over (a, b) ∈ [0.01, 14]² (the Gamma(2, 1) mass beyond 14 is 1e-5; against a 600² grid
    the posterior mean moves by 1e-3, under 1/20 of the Monte Carlo error allowed below)."""
    grid = np.linspace(0.01, 14, 200)
    a, b = np.meshgrid(grid, grid, indexing="ij")
    log_w = (stats.gamma.logpdf(a, 2) + stats.gamma.logpdf(b, 2) - betaln(a, b)).ravel()
    a, b = a.ravel(), b.ravel()
    log_theta, log_rest = np.log(THETA[::20]), np.log1p(-THETA[::20])
    coarse = np.array(
        [
            logsumexp(log_w + (a - 1) * x + (b - 1) * y)
            for x, y in zip(log_theta, log_rest, strict=True)
        ]
    )
    return np.interp(THETA, THETA[::20], coarse)


@pytest.mark.integration
def test_hyperprior_model_matches_the_exact_posterior():
    y = np.array([3, 5, 8, 2, 9])
    with pm.Model():
        a = pm.Gamma("a", 2.0, 1.0)
        b = pm.Gamma("b", 2.0, 1.0)
        p = pm.Beta("p", a, b)
        pm.Binomial("y", n=20, p=p, observed=y)
        idata = pymc_dp.sample(
            1500, epsilon=1.0, inference="noise-aware", random_seed=4, **numpy_noise(2), **FAST
        )
    assert np.isfinite(idata.posterior["a"]).all()
    [event] = PrivacyLedger.from_datatree(idata).events
    assert event.noise_scale == 20.0  # 20 trials per record, one released component, ε = 1
    noisy = float(idata["released_statistics"]["y"].values[0, 0])
    prior = _hyperprior_log_marginal()
    aware = prior + _release_log_likelihood(noisy, 20.0, 100)
    _assert_matches(idata.posterior["p"], *_grid_moments(aware))
    # the plug-in posterior (projected count as exact) is less than half as wide
    projected = float(idata["released_statistics"]["y_projected"].values[0, 0])
    plugin = prior + projected * np.log(THETA) + (100 - projected) * np.log1p(-THETA)
    assert _grid_moments(plugin)[1] < 0.5 * _grid_moments(aware)[1]


def test_grouped_add_remove_dirichlet_and_multichain_run():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 2, 200)
    y = rng.integers(0, 3, 200)
    with pm.Model(coords={"g": ["a", "b"], "k": ["x", "y", "z"]}):
        theta = pm.Dirichlet("theta", np.ones(3), dims=("g", "k"))
        pm.Categorical("y", p=theta[groups], observed=y)
        idata = pymc_dp.sample(
            300,
            epsilon=1.0,
            neighbouring="add-remove-one",
            inference="noise-aware",
            **numpy_noise(4),
            **FAST,
        )
    theta = idata.posterior["theta"]
    assert theta.shape == (2, 300, 2, 3)
    np.testing.assert_allclose(theta.sum("k"), 1.0)
    assert len(PrivacyLedger.from_datatree(idata).events) == 1


def test_refuses_a_model_without_releases():
    with (
        _bernoulli_model(Y10) as model,
        pytest.raises(NonPrivateModelError, match=r"pymc_dp\.sample"),
    ):
        NoiseAwareConjugateGibbs([model["p"]])


def test_each_chain_restarts_its_latent_counts():
    """setup_chain puts every latent table back at the rounding of the projection."""
    with _bernoulli_model(Y10) as model:
        step = PrivateConjugateGibbs([model["p"]], epsilon=1.0, **numpy_noise(6))
    private = pymc_dp.build_private_model(model, step.releases)
    aware = NoiseAwareConjugateGibbs([private["p"]], model=private)
    [update] = aware._updates
    start = update.latent[0].counts.copy()
    update.latent[0].counts[:] = -1.0
    aware.setup_chain(np.random.default_rng(0), 0, 10)
    np.testing.assert_array_equal(update.latent[0].counts, start)
    assert update.exact is not None  # one release, one component, constant prior
