"""pymc_dp.sample on Poisson, Normal (unknown mean and sd) and linear-regression models: releases,
ledger, both inference modes, agreement with the non-private posterior at large ε, clamping,
re-running a private model on new releases, and a small noise-aware coverage check."""

from __future__ import annotations

import json
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.analysis.rewrite import build_private_model, set_released_statistics
from pymc_dp.families import BoundedLink
from pymc_dp.mechanisms.statistics import project_bounded, release_bounded

FAST = {
    "tune": 300,
    "chains": 2,
    "cores": 1,
    "progressbar": False,
    "compute_convergence_checks": False,
}
INFERENCES = ("plugin", "noise-aware")


def numpy_noise(seed=1):
    return {"noise_backend": "numpy", "noise_rng": np.random.default_rng(seed)}


def normal_model(n=400, seed=0):
    x = np.clip(np.random.default_rng(seed).normal(3.0, 1.5, n), 0, 10)
    with pm.Model() as model:
        mu = pm.Normal("mu", 5, 5)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("x", mu, sigma, observed=x)
    return model, {"x": (0, 10)}, ["mu", "sigma"]


def poisson_model(n=600, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, n)
    counts = np.minimum(rng.poisson(np.array([1.0, 3.0, 6.0])[groups]), 20)
    with pm.Model(coords={"g": ["a", "b", "c"]}) as model:
        lam = pm.Gamma("lam", 2, 0.5, dims="g")
        pm.Poisson("y", mu=lam[groups], observed=counts)
    return model, {"y": (0, 20)}, ["lam"]


def regression_model(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = np.clip(rng.normal([0.5, 0.4], [0.15, 0.2], (n, 2)), 0, 1)
    y = np.clip(1.0 + x @ [2.0, -1.0] + rng.normal(0, 0.3, n), -2, 5)
    with pm.Model(coords={"coef": ["x0", "x1"]}) as model:
        covariates = pm.Data("X", x)
        beta = pm.Normal("beta", 0, 5, dims="coef")
        alpha = pm.Normal("alpha", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu=covariates @ beta + alpha, sigma=sigma, observed=y)
    return model, {"y": (-2, 5), "X": (0, 1)}, ["beta", "alpha", "sigma"]


BUILDERS = {"normal": normal_model, "poisson": poisson_model, "regression": regression_model}
LATENT = {
    "normal": set(),  # the exact two-component likelihood: no latent variable
    "poisson": set(),  # grouped: the private n_g integrated out by quadrature
    "regression": {
        "y_noise_variance",
        "y_covariate_mean",
        "y_covariate_spread",
        "y_covariate_sd",
        "y_covariate_corr_chol",
    },
}


# --- end to end, both inference modes -------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize("inference", INFERENCES)
@pytest.mark.parametrize("family", list(BUILDERS))
def test_end_to_end_release_once_and_sample(family, inference):
    model, bounds, parameters = BUILDERS[family]()
    with model:
        idata = pymc_dp.sample(
            100, epsilon=2.0, data_bounds=bounds, inference=inference, **numpy_noise(), **FAST
        )
    [event] = PrivacyLedger.from_datatree(idata).events
    observed = model.observed_RVs[0].name
    [link] = recognise(model, "laplace", data_bounds=bounds).blocks.values()
    assert event.mechanism == "laplace" and event.epsilon == 2.0
    assert event.sensitivity == link.family.sensitivity(link.structure, "replace-one")
    assert event.noise_scale == event.sensitivity / 2.0 and event.variables[0] == observed
    assert set(idata.children) == {
        "posterior",
        "sample_stats",
        "released_statistics",
        "privacy_ledger",
    }
    latent = LATENT[family] if inference == "noise-aware" else set()
    assert set(idata.posterior.data_vars) == set(parameters) | latent
    released = idata["released_statistics"]
    noisy = released[observed].to_numpy()
    public_n = None if family == "poisson" else [link.data.size]  # grouped: n_g private
    projected = project_bounded(link.structure, noisy, event.noise_scale, "replace-one", public_n)
    np.testing.assert_allclose(released[f"{observed}_projected"].to_numpy(), projected)
    assert released[f"{observed}_statistic"].values[0] == "n"
    assert released[observed].attrs["laplace_scale"] == event.noise_scale
    # the released values are weights ⊙ statistics + noise; the projection is un-weighted
    index = link.family.released_components(link.structure, "replace-one")
    weights = link.family.weights(link.structure, "replace-one")[index]
    np.testing.assert_array_equal(released[observed].attrs["weights"], weights)
    assert "weights" not in released[f"{observed}_projected"].attrs


# --- large ε: the non-private posterior ------------------------------------------------------
@pytest.fixture(scope="module")
def non_private():
    """The non-private posterior of each model (the reference; never released)."""
    references = {}
    for family, build in BUILDERS.items():
        model, _, parameters = build()
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(1000, random_seed=5, **{**FAST, "tune": 500})
        draws = idata.posterior
        references[family] = {
            p: (draws[p].mean(("chain", "draw")), draws[p].std(("chain", "draw")))
            for p in parameters
        }
    return references


@pytest.mark.integration
@pytest.mark.parametrize("inference", INFERENCES)
@pytest.mark.parametrize("family", list(BUILDERS))
def test_large_epsilon_gives_the_non_private_posterior(family, inference, non_private):
    model, bounds, parameters = BUILDERS[family]()
    with model:
        idata = pymc_dp.sample(
            500,
            epsilon=1e6,
            data_bounds=bounds,
            inference=inference,
            random_seed=6,
            **numpy_noise(),
            **{**FAST, "tune": 400},
        )
    for p in parameters:
        mean, sd = non_private[family][p]
        private = idata.posterior[p]
        # Monte Carlo error of the difference of two means of ≥ 500 effective draws: ≤ 0.06
        # sd; the CLT law of the noise-aware model costs a little more. 0.25 sd is > 4 of it.
        np.testing.assert_array_less(np.abs(private.mean(("chain", "draw")) - mean), 0.25 * sd)
        np.testing.assert_allclose(private.std(("chain", "draw")), sd, rtol=0.2)


# --- neighbouring, clamping, mixing, options -------------------------------------------------
@pytest.mark.integration
def test_add_remove_releases_n_and_makes_it_latent():
    model, bounds, _ = normal_model()
    with model:
        idata = pymc_dp.sample(
            200,
            epsilon=1.0,
            neighbouring="add-remove-one",
            data_bounds=bounds,
            inference="noise-aware",
            **numpy_noise(),
            **FAST,
        )
    [event] = PrivacyLedger.from_datatree(idata).events
    # the weighted (0.05 n, 0.57 Σu, 2.66 Σu²) moves by at most 1 when a record is added
    assert event.neighbouring == "add-remove-one"
    assert event.sensitivity == pytest.approx(1.0)
    assert idata["released_statistics"]["x"].shape == (1, 3)
    n = idata.posterior["x_n_records"]
    # n's share 0.05 of ε = 1: Laplace(1/0.05 = 20) noise on n = 400
    assert abs(float(n.mean()) - 400) < 5 * (2**0.5 * 20.0)


@pytest.mark.integration
def test_clamping_is_opt_in_and_recorded_in_the_ledger(tmp_path):
    x = np.clip(np.random.default_rng(0).normal(3.0, 1.5, 400), 0, 10)
    x[:5] = [-3.0, 11.0, 12.0, 50.0, -1.0]
    bounds = {"x": (0, 10)}
    with pm.Model():
        mu = pm.Normal("mu", 5, 5)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("x", mu, sigma, observed=x)
        ledger = PrivacyLedger()
        with pytest.raises(pymc_dp.InvalidPrivateDataError, match="x: 5 values outside"):
            pymc_dp.sample(10, epsilon=1.0, data_bounds=bounds, ledger=ledger, **FAST)
        assert len(ledger) == 0
        idata = pymc_dp.sample(
            100, epsilon=1.0, data_bounds=bounds, clamp_to_bounds=["x"], **numpy_noise(), **FAST
        )
    [event] = PrivacyLedger.from_datatree(idata).events
    assert event.clamping == "x to [0, 10]"
    assert "records clamped: x to [0, 10]" in event.statistic
    assert "5" not in event.clamping  # how many were clamped is private
    record = json.loads(PrivacyLedger.from_datatree(idata).to_json())["events"][0]
    assert record["clamping"] == "x to [0, 10]"
    path = tmp_path / "trace.nc"
    idata.to_netcdf(path)
    loaded = PrivacyLedger.from_datatree(xr.open_datatree(path))
    assert loaded.events[0].clamping == "x to [0, 10]"


@pytest.mark.integration
def test_conjugate_and_bounded_likelihoods_in_one_model():
    rng = np.random.default_rng(3)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("b", p, observed=(rng.random(300) < 0.3).astype(int))
        mu = pm.Normal("mu", 0, 10)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("x", mu, sigma, observed=np.clip(rng.normal(1, 1, 300), -3, 5))
        idata = pymc_dp.sample(
            200,
            epsilon={"b": 1.0, "x": 2.0},
            data_bounds={"x": (-3, 5)},
            nuts={"max_treedepth": 8},
            target_accept=0.9,
            inference="plugin",
            **numpy_noise(),
            **FAST,
        )
    events = PrivacyLedger.from_datatree(idata).events
    assert [(e.variables[0], e.epsilon) for e in events] == [("b", 1.0), ("x", 2.0)]
    assert set(idata.posterior.data_vars) == {"p", "mu", "sigma"}
    steps = set(np.unique(idata.sample_stats["privacy_epsilon"]).tolist())
    assert steps == {0.0}  # the conjugate step ran next to NUTS
    assert abs(float(idata.posterior["mu"].mean()) - 1.0) < 0.3


@pytest.mark.integration
def test_regression_trace_reads_in_arviz_with_dims_and_coords():
    model, bounds, _ = regression_model()
    with model:
        idata = pymc_dp.sample(
            300, epsilon=5.0, data_bounds=bounds, inference="plugin", **numpy_noise(), **FAST
        )
    assert idata.posterior["beta"].dims == ("chain", "draw", "coef")
    assert list(idata.posterior["beta"].coords["coef"].values) == ["x0", "x1"]
    summary = az.summary(idata, var_names=["beta", "alpha", "sigma"])
    assert list(summary.index) == ["beta[x0]", "beta[x1]", "alpha", "sigma"]
    assert np.all(np.isfinite(summary["mean"].to_numpy(dtype=float)))


# --- a private model built once, re-run on new releases --------------------------------------
@pytest.mark.integration
def test_private_model_reruns_on_new_releases_without_rebuilding():
    model, bounds, _ = normal_model(n=200)
    [link] = recognise(model, "laplace", data_bounds=bounds).blocks.values()
    rng = np.random.default_rng(11)
    first = release_bounded(link, 1e6, ledger=PrivacyLedger(), backend="numpy", rng=rng)
    private = build_private_model(model, [first], inference="plugin")
    with private:
        step = pm.NUTS()
    means = []
    for centre in (2.0, 6.0):
        data = np.clip(rng.normal(centre, 1.0, 200), 0, 10)
        release = release_bounded(
            BoundedLink(link.structure, data), 1e6, ledger=PrivacyLedger(), backend="numpy", rng=rng
        )
        set_released_statistics(private, "x", release.noisy)
        np.testing.assert_allclose(
            private["x_projected_statistics"].get_value(), release.table, rtol=1e-12
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(300, step=step, model=private, random_seed=1, **FAST)
        means.append((float(idata.posterior["mu"].mean()), data.mean()))
    for posterior_mean, data_mean in means:
        assert abs(posterior_mean - data_mean) < 0.05  # sd of μ ≈ 1/√200 = 0.07; 300 draws


# --- noise-aware coverage smoke test -----------------------------------------------------------
def _coverage(model, bounds, simulate, epsilon, datasets=10, seed=0):
    """How many of the central 90% intervals of the noise-aware posterior cover the truth,
    over ``datasets`` simulated (parameters, data) pairs, one private model compiled once."""
    rng = np.random.default_rng(seed)
    [link] = recognise(model, "laplace", data_bounds=bounds).blocks.values()
    observed = link.observed
    private = None
    covered = total = 0
    for _ in range(datasets):
        truth, data = simulate(rng)
        new = BoundedLink(link.structure, *data)
        release = release_bounded(new, epsilon, ledger=PrivacyLedger(), backend="numpy", rng=rng)
        if private is None:
            private = build_private_model(model, [release], inference="noise-aware")
            with private:
                step = pm.NUTS(target_accept=0.95)
        set_released_statistics(private, observed, release.noisy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(
                200,
                step=step,
                model=private,
                random_seed=int(rng.integers(2**31)),
                **{**FAST, "chains": 1, "tune": 200},
            )
        for name, value in truth.items():
            draws = idata.posterior[name].to_numpy().reshape(-1)
            low, high = np.quantile(draws, [0.05, 0.95])
            covered += int(low <= value <= high)
            total += 1
    return covered, total


def _enough(covered, total):
    """At least 70% of 20 nominal-90% intervals cover: P(Binomial(20, 0.9) ≤ 13) = 0.24%, so a
    calibrated posterior fails this rarely (the seeds are fixed); at a true coverage of 60%
    it fails with probability 0.75."""
    assert total == 20
    return covered >= 0.7 * total


@pytest.mark.integration
def test_noise_aware_normal_intervals_cover():
    n = 150
    with pm.Model() as model:
        mu = pm.Normal("mu", 5, 1)
        sigma = pm.Gamma("sigma", 10, 5)
        pm.Normal("x", mu, sigma, observed=np.full(n, 5.0))

    def simulate(rng):
        mu, sigma = rng.normal(5, 1), rng.gamma(10, 1 / 5)
        return {"mu": mu, "sigma": sigma}, (np.clip(rng.normal(mu, sigma, n), -5, 15),)

    assert _enough(*_coverage(model, {"x": (-5, 15)}, simulate, epsilon=0.5))


@pytest.mark.integration
def test_noise_aware_poisson_intervals_cover():
    n = 80
    with pm.Model() as model:
        lam = pm.Gamma("lam", 4, 1)
        pm.Poisson("y", lam, observed=np.ones(n, int))

    def simulate(rng):
        lam = rng.gamma(4, 1)
        return {"lam": lam}, (np.minimum(rng.poisson(lam, n), 20),)

    assert _enough(*_coverage(model, {"y": (0, 20)}, simulate, epsilon=0.3, datasets=20))


@pytest.mark.integration
def test_noise_aware_regression_intervals_cover():
    n = 300
    with pm.Model() as model:
        covariates = pm.Data("X", np.full((n, 1), 0.5))
        beta = pm.Normal("beta", 0, 1, shape=1)
        alpha = pm.Normal("alpha", 0, 1)
        sigma = pm.Gamma("sigma", 10, 20)
        pm.Normal("y", covariates @ beta + alpha, sigma, observed=np.zeros(n))

    def simulate(rng):
        beta, alpha, sigma = rng.normal(0, 1), rng.normal(0, 1), rng.gamma(10, 1 / 20)
        x = np.clip(rng.normal(0.5, 0.2, (n, 1)), 0, 1)
        y = np.clip(alpha + beta * x[:, 0] + rng.normal(0, sigma, n), -5, 5)
        return {"beta": beta, "alpha": alpha}, (y, x)

    bounds = {"y": (-5, 5), "X": (0, 1)}
    assert _enough(*_coverage(model, bounds, simulate, epsilon=3.0))
