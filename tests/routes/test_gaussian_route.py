"""pymc_dp.sample(noise="gaussian"): the route end to end (Beta–Bernoulli, several links,
regression), the noise-aware private model with a known noise variance, and bad input that
must raise before anything is charged."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp
from pymc_dp import BudgetExceededError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.analysis.rewrite import build_private_model
from pymc_dp.mechanisms.gaussian import gaussian_calibration
from pymc_dp.mechanisms.statistics import release_bounded

FAST = {
    "tune": 100,
    "chains": 1,
    "cores": 1,
    "progressbar": False,
    "compute_convergence_checks": False,
}


def bernoulli_model(n=300, seed=0):
    y = (np.random.default_rng(seed).random(n) < 0.3).astype(int)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=y)
    return model, y


def regression_model(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, 2))
    y = np.clip(1.0 + x @ [2.0, -1.0] + rng.normal(0, 0.3, n), -2, 5)
    with pm.Model(coords={"coef": ["x0", "x1"]}) as model:
        covariates = pm.Data("X", x)
        beta = pm.Normal("beta", 0, 5, dims="coef")
        alpha = pm.Normal("alpha", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu=covariates @ beta + alpha, sigma=sigma, observed=y)
    return model, {"y": (-2, 5), "X": (0, 1)}


@pytest.mark.parametrize("inference", ["noise-aware", "plugin"])
def test_beta_bernoulli_end_to_end(inference):
    model, y = bernoulli_model()
    with model:
        idata = pymc_dp.sample(
            500, epsilon=1.0, delta=1e-6, noise="gaussian", inference=inference, **FAST
        )
    ledger = PrivacyLedger.from_datatree(idata)
    [event] = ledger.events
    calibration = gaussian_calibration(1.0, 1.0, 1e-6)  # one component: Δ₂ = 1
    assert event.mechanism == "gaussian" and event.noise_backend == "opendp"
    assert (event.epsilon, event.delta, event.sensitivity) == (1.0, 1e-6, 1.0)
    assert (event.noise_scale, event.rho) == (calibration.scale, calibration.rho)
    assert ledger.guaranteed and (ledger.epsilon, ledger.delta) == (1.0, 1e-6)
    assert ledger.epsilon_at(1e-6).epsilon <= 1.0
    released = idata["released_statistics"]
    assert released["y"].attrs["noise"] == "gaussian"
    assert released["y"].attrs["noise_scale"] == event.noise_scale
    assert released["y"].shape == (1, 1)
    assert released["y_projected"].to_numpy().sum() == y.size  # public n, projected
    assert set(idata.children) == {
        "posterior",
        "sample_stats",
        "released_statistics",
        "privacy_ledger",
    }
    # the posterior is Beta(1 + s, 1 + n − s) around the noisy s: its mean is within
    # 6 noise sd (plus 6 posterior sd) of the true proportion
    mean = float(idata.posterior["p"].mean())
    spread = 6 * (event.noise_scale / y.size + math.sqrt(0.25 / y.size))
    assert abs(mean - y.mean()) < spread
    if inference == "noise-aware":  # the noise widens the posterior beyond the plug-in's
        plug = stats.beta(1 + released["y_projected"][0, 0], 1 + released["y_projected"][0, 1])
        assert float(idata.posterior["p"].std()) > plug.std()


@pytest.mark.integration
def test_several_links_split_delta_and_use_their_l2_sensitivities():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 2, 200)
    y = rng.integers(0, 2, 200)
    z = rng.integers(0, 3, 150)
    ledger = PrivacyLedger()
    with pm.Model():
        p = pm.Beta("p", 1.0, 1.0, shape=2)
        pm.Bernoulli("y", p=p[groups], observed=y)
        q = pm.Dirichlet("q", np.ones(3))
        pm.Categorical("z", p=q, observed=z)
        idata = pymc_dp.sample(
            200,
            epsilon=2.0,
            delta=1e-6,
            noise="gaussian",
            ledger=ledger,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(0),
            **FAST,
        )
    events = {e.variables[0]: e for e in ledger.events}
    assert {e.mechanism for e in events.values()} == {"gaussian"}
    assert all(e.epsilon == 1.0 and e.delta == 5e-7 for e in events.values())
    # grouped Bernoulli table under replace-one: √2; three categories, one group: √2
    assert events["y"].sensitivity == pytest.approx(math.sqrt(2))
    assert events["z"].sensitivity == pytest.approx(math.sqrt(2))
    assert ledger.delta == pytest.approx(1e-6)
    assert idata["released_statistics"]["z"].shape == (1, 3)
    assert idata.posterior["q"].shape[-1] == 3


@pytest.mark.integration
def test_regression_end_to_end_plugin():
    model, bounds = regression_model()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pymc_dp.sample(
            200,
            epsilon=5.0,
            delta=1e-6,
            noise="gaussian",
            data_bounds=bounds,
            inference="plugin",
            random_seed=1,
            noise_backend="numpy",  # a seeded release: OpenDP's fresh noise made this flaky
            noise_rng=np.random.default_rng(1),  # (|β̂ − β| up to 0.35 over seeds 0-9)
            **FAST,
        )
    [event] = PrivacyLedger.from_datatree(idata).events
    # z = (1, x0, x1, ỹ) centred: 9 weighted entries released, n public; each moves by at
    # most its share of ε: Δ₂ = √Σ s_j² (Laplace's L1 would be 0.640)
    shares = np.array([0.045, 0.045, 0.14, 0.13 / 3, 0.23, 0.13 / 3, 0.13 / 3, 0.23, 0.18])
    l2 = float(np.sqrt(np.sum(shares**2)))
    assert event.mechanism == "gaussian" and event.sensitivity == pytest.approx(l2, rel=1e-12)
    assert event.noise_scale == pytest.approx(gaussian_calibration(l2, 5.0, 1e-6).scale, rel=1e-12)
    released = idata["released_statistics"]
    assert released["y"].shape == (1, 9)
    assert released["y"].attrs["noise"] == "gaussian" and "laplace_scale" not in released["y"].attrs
    beta = idata.posterior["beta"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(beta, [2.0, -1.0], atol=0.5)


def test_noise_aware_private_model_has_no_noise_variances_and_the_exact_release_density():
    """Normal family, Gaussian noise: the potential is MvNormal(c ⊙ n·E t, (c cᵀ) ⊙ n·Cov t
    + σ²I) of the released (c₁Σu, c₂Σu²) with u ~ N(m, s²) on the centred unit scale, c the
    budget split's weights (0.3, 2.8) — written out here by hand."""
    x = np.clip(np.random.default_rng(1).normal(3.0, 1.5, 300), 0, 10)
    with pm.Model() as model:
        mu = pm.Normal("mu", 5, 5)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("x", mu, sigma, observed=x)
    [link] = recognise(model, "laplace", data_bounds={"x": (0, 10)}).blocks.values()
    release = release_bounded(
        link,
        1.0,
        ledger=PrivacyLedger(),
        backend="numpy",
        rng=np.random.default_rng(0),
        noise="gaussian",
        delta=1e-6,
    )
    # L2 of the weighted entries: √(0.3² + 0.7²) (each moves by at most its share)
    assert release.noise == "gaussian"
    assert release.event.sensitivity == pytest.approx(math.sqrt(0.3**2 + 0.7**2))
    private = build_private_model(model, [release], inference="noise-aware")
    assert {rv.name for rv in private.free_RVs} == {"mu", "sigma"}  # no x_noise_variance
    point = {"mu": 3.2, "sigma_log__": math.log(1.4)}
    [graph] = private.replace_rvs_by_values([private["x_released"]])
    potential = private.compile_fn(graph, inputs=private.value_vars)(point)
    m, s, n, scale = 3.2 / 10 - 0.5, 1.4 / 10, x.size, release.scale
    c = np.array([0.3, 2.8])
    mean = c * n * np.array([m, m * m + s * s])
    cov = np.outer(c, c) * n * np.array(
        [[s * s, 2 * m * s * s], [2 * m * s * s, 4 * m * m * s * s + 2 * s**4]]
    ) + scale**2 * np.eye(2)
    expected = stats.multivariate_normal(mean, cov).logpdf(release.noisy[0])
    assert float(potential) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"noise": "gaussian", "delta": 0.0}, ValueError, "delta must satisfy 0 < delta < 1"),
        ({"noise": "gaussian", "delta": 1.0}, ValueError, "delta must satisfy 0 <= delta < 1"),
        ({"noise": "foo", "delta": 1e-6}, ValueError, "noise must be one of"),
        (
            {"noise": "gaussian", "delta": 1e-6, "mechanism": "ops"},
            ValueError,
            "noise='gaussian' is the noise of the statistics route",
        ),
        (
            {"noise": "gaussian", "delta": 1e-6, "epsilon": 1.0, "budget": (5.0, 1e-7)},
            BudgetExceededError,
            "over the budget",
        ),
    ],
)
def test_bad_input_raises_before_any_charge(kwargs, error, match):
    model, _ = bernoulli_model()
    arguments = {"epsilon": 1.0, **kwargs}
    budget = arguments.pop("budget", None)
    ledger = PrivacyLedger(budget=budget)
    with model, pytest.raises(error, match=match):
        pymc_dp.sample(10, ledger=ledger, **arguments, **FAST)
    assert len(ledger) == 0


def test_gaussian_is_refused_for_hmms_before_any_release():
    from pymc_dp.hmm import simulate_records
    from pymc_dp.models import naive_bayes_hmm

    simulated = simulate_records(2, 5, 2, [2, 3], 100, np.random.default_rng(0))
    ledger = PrivacyLedger()
    with pytest.raises(NotImplementedError, match="not implemented for naive-Bayes HMM"):
        pymc_dp.sample(
            10,
            model=naive_bayes_hmm(simulated.counts, 2),
            epsilon=1.0,
            delta=1e-6,
            noise="gaussian",
            ledger=ledger,
            **FAST,
        )
    assert len(ledger) == 0


def test_private_conjugate_gibbs_releases_with_gaussian_noise():
    model, _ = bernoulli_model()
    ledger = PrivacyLedger()
    with model:
        step = pymc_dp.PrivateConjugateGibbs(
            [model["p"]], 1.0, ledger=ledger, noise="gaussian", delta=1e-6
        )
    [event] = ledger.events
    assert event.mechanism == "gaussian" and event.delta == 1e-6
    assert step.releases[0].noise == "gaussian"
    with model, pytest.raises(ValueError, match="delta must satisfy 0 < delta < 1"):
        pymc_dp.PrivateConjugateGibbs([model["p"]], 1.0, ledger=ledger, noise="gaussian")
    assert len(ledger) == 1
