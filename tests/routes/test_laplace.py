"""pymc_dp.sample and PrivateConjugateGibbs: posteriors, releases, refusals, bad input, traces."""

from __future__ import annotations

import json

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pymc_dp
from pymc_dp import (
    BudgetExceededError,
    InvalidPrivateDataError,
    NonPrivateModelError,
    PrivacyLedger,
    PrivateConjugateGibbs,
)
from pymc_dp.analysis import recognise
from pymc_dp.conjugacy import analyse_model
from pymc_dp.reference import exact_conjugate_posterior
from pymc_dp.release import release_sufficient_statistics, sufficient_statistics

FAST = {
    "tune": 50,
    "chains": 1,
    "cores": 1,
    "progressbar": False,
    "compute_convergence_checks": False,
}


def grouped_bernoulli(n=3000, seed=0, y=None, groups=None, coords=True):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, size=n) if groups is None else groups
    y = (rng.random(n) < np.array([0.1, 0.4, 0.7])[groups]).astype(int) if y is None else y
    with pm.Model(coords={"g": ["a", "b", "c"]} if coords else None) as model:
        p = pm.Beta("p", 2.0, 3.0, dims="g" if coords else None, shape=None if coords else 3)
        pm.Bernoulli("y", p=p[groups], observed=y)
    return model, y, groups


def numpy_noise(seed=1):
    return {"noise_backend": "numpy", "noise_rng": np.random.default_rng(seed)}


# --- posteriors ---------------------------------------------------------------------------
@pytest.mark.integration
def test_large_epsilon_gives_the_non_private_posterior():
    model, y, groups = grouped_bernoulli()
    with model:
        idata = pymc_dp.sample(4000, epsilon=1e7, random_seed=3, **FAST)
    post = idata.posterior["p"]
    for g in range(3):
        s, f = y[groups == g].sum(), (1 - y[groups == g]).sum()
        exact = stats.beta(2 + s, 3 + f)
        # Independent exact draws: mean within 4 standard errors, sd within 5%.
        assert abs(float(post.isel(g=g).mean()) - exact.mean()) < 4 * exact.std() / np.sqrt(4000)
        assert float(post.isel(g=g).std()) == pytest.approx(exact.std(), rel=0.05)


def test_small_epsilon_widens_the_spread_around_the_non_private_posterior():
    """Foulds' plug-in posterior does not widen itself; across releases, its mean spreads
    around the non-private one with sd ≈ √2·(2/ε)/n_g (Laplace scale 2/ε on ~n_g counts)."""
    model, *_ = grouped_bernoulli(n=600, seed=2)
    [link] = analyse_model(model).values()
    exact = sufficient_statistics(link)
    exact_mean = (2 + exact[:, 0]) / (5 + exact.sum(axis=1))
    rng = np.random.default_rng(7)
    rms = {}
    for eps in (10.0, 0.1):
        deviations = []
        for _ in range(200):
            released = release_sufficient_statistics(
                link, eps, ledger=PrivacyLedger(), backend="numpy", rng=rng
            )
            mean = (2 + released.table[:, 0]) / (5 + released.table.sum(axis=1))
            deviations.append(mean - exact_mean)
        rms[eps] = float(np.sqrt(np.mean(np.square(deviations))))
    # Scales differ 100×; clamping and the prior shrink the ratio a little, never below 20×.
    assert rms[0.1] > 20 * rms[10.0]
    assert rms[10.0] < 0.005


@pytest.mark.integration
def test_conjugate_update_uses_the_projected_noisy_table():
    model, *_ = grouped_bernoulli(n=500)
    with model:
        idata = pymc_dp.sample(4000, epsilon=0.5, random_seed=0, **numpy_noise(), **FAST)
    table = idata["released_statistics"]["y_projected"].to_numpy()
    noisy = idata["released_statistics"]["y"].to_numpy()
    np.testing.assert_array_equal(table, np.clip(noisy, 0, None))
    means = idata.posterior["p"].mean(("chain", "draw")).to_numpy()
    expected = (2 + table[:, 0]) / (5 + table.sum(axis=1))
    np.testing.assert_allclose(means, expected, atol=0.01)


def test_one_group_binary_releases_one_count_with_sensitivity_one():
    y = np.r_[np.ones(30, int), np.zeros(70, int)]
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=y)
        idata = pymc_dp.sample(200, epsilon=1.0, **numpy_noise(), **FAST)
    [event] = PrivacyLedger.from_datatree(idata).events
    assert event.sensitivity == 1.0 and event.noise_scale == 1.0
    released = idata["released_statistics"]
    assert released["y"].shape == (1, 1)
    assert float(released["y_projected"].sum()) == pytest.approx(100.0)  # n is public


@pytest.mark.parametrize(
    ("neighbouring", "sensitivity"), [("replace-one", 2.0), ("add-remove-one", 1.0)]
)
def test_neighbouring_relation_sets_the_sensitivity(neighbouring, sensitivity):
    model, *_ = grouped_bernoulli(n=100)
    with model:
        idata = pymc_dp.sample(50, epsilon=2.0, neighbouring=neighbouring, **numpy_noise(), **FAST)
    [event] = PrivacyLedger.from_datatree(idata).events
    assert (event.neighbouring, event.sensitivity, event.noise_scale) == (
        neighbouring,
        sensitivity,
        sensitivity / 2.0,
    )


@pytest.mark.integration
def test_binomial_multinomial_and_hyperprior_next_to_nuts():
    rng = np.random.default_rng(5)
    trials = rng.integers(0, 6, size=400)
    successes = rng.binomial(trials, 0.3)
    counts = rng.multinomial(4, [0.2, 0.3, 0.5], size=300)
    with pm.Model():
        kappa = pm.Gamma("kappa", 2.0, 0.5)  # touches no private data: NUTS
        p = pm.Beta("p", kappa, kappa)
        pm.Binomial("s", n=trials, p=p, observed=successes)
        theta = pm.Dirichlet("theta", np.ones(3))
        pm.Multinomial("c", n=4, p=theta, observed=counts)
        idata = pymc_dp.sample(
            500,
            epsilon={"s": 1.0, "c": 1.0},
            max_trials={"s": 5},
            random_seed=2,
            **numpy_noise(),
            **FAST,
        )
    ledger = PrivacyLedger.from_datatree(idata)
    assert [e.sensitivity for e in ledger.events] == [10.0, 8.0]  # 2·max_trials; 2·n
    assert ledger.epsilon == 2.0
    assert "kappa" in idata.posterior and "step_size" in idata.sample_stats
    assert float(idata.posterior["p"].mean()) == pytest.approx(0.3, abs=0.05)
    np.testing.assert_allclose(
        idata.posterior["theta"].mean(("chain", "draw")), [0.2, 0.3, 0.5], atol=0.05
    )


# --- releases, chains and the ledger ----------------------------------------------------------
@pytest.mark.integration
def test_multichain_multicore_run_releases_once():
    model, *_ = grouped_bernoulli(n=300)
    with model:
        idata = pymc_dp.sample(
            100,
            epsilon=1.0,
            tune=20,
            chains=3,
            cores=2,
            progressbar=False,
            random_seed=4,
            compute_convergence_checks=False,
        )
    ledger = PrivacyLedger.from_datatree(idata)
    assert len(ledger.events) == 1 and ledger.epsilon == 1.0
    assert ledger.events[0].noise_backend == "opendp"
    assert idata.posterior.sizes["chain"] == 3
    assert float(idata.sample_stats["privacy_epsilon"].sum()) == 0.0


def test_epsilon_is_split_equally_across_releases():
    rng = np.random.default_rng(0)
    with pm.Model():
        a = pm.Beta("a", 1, 1)
        pm.Bernoulli("y1", p=a, observed=rng.integers(0, 2, 50))
        b = pm.Dirichlet("b", np.ones(3))
        pm.Categorical("y2", p=b, observed=rng.integers(0, 3, 50))
        idata = pymc_dp.sample(20, epsilon=0.8, **numpy_noise(), **FAST)
    ledger = PrivacyLedger.from_datatree(idata)
    assert [e.epsilon for e in ledger.events] == [0.4, 0.4]
    assert [e.variables for e in ledger.events] == [("y1", "a"), ("y2", "b")]


def test_budget_refuses_before_releasing_anything():
    model, *_ = grouped_bernoulli(n=100)
    ledger = PrivacyLedger(budget=1.0)
    with model:
        pymc_dp.sample(20, epsilon=0.7, ledger=ledger, **FAST)
        assert len(ledger) == 1
        with pytest.raises(BudgetExceededError, match=r"release of"):
            pymc_dp.sample(20, epsilon=0.7, ledger=ledger, **FAST)
        with pytest.raises(BudgetExceededError, match=r"release of"):
            pymc_dp.sample(20, epsilon=2.0, budget=1.5, **FAST)
    assert len(ledger) == 1 and ledger.epsilon == 0.7


@pytest.mark.integration
def test_step_constructed_by_hand_releases_once_and_is_reused():
    model, *_ = grouped_bernoulli(n=200)
    with model:
        step = PrivateConjugateGibbs([model["p"]], epsilon=0.3)
        assert len(step.events) == 1 and step.ledger.epsilon == 0.3
        idata = pymc_dp.sample(50, step=step, **FAST)
        with pytest.raises(TypeError, match="PrivateConjugateGibbs"):
            pymc_dp.sample(50, step=pm.Metropolis([model["p"]]), epsilon=1.0, **FAST)
    assert PrivacyLedger.from_datatree(idata).epsilon == 0.3


@pytest.mark.integration
def test_ledger_round_trips_through_json_dataset_and_netcdf(tmp_path):
    model, *_ = grouped_bernoulli(n=400)
    with model:
        idata = pymc_dp.sample(100, epsilon=1.0, budget=(2.0, 0.0), **{**FAST, "chains": 2})
    path = tmp_path / "trace.nc"
    idata.to_netcdf(path, engine="h5netcdf")
    loaded = xr.open_datatree(path, engine="h5netcdf")
    before, after = PrivacyLedger.from_datatree(idata), PrivacyLedger.from_datatree(loaded)
    assert before.events == after.events and after.budget == (2.0, 0.0)
    assert PrivacyLedger.from_dataset(loaded["privacy_ledger"].to_dataset()).events == (
        before.events
    )
    assert json.loads(loaded.attrs["pymc_dp_ledger"])["epsilon"] == 1.0
    assert loaded["privacy_ledger"]["mechanism"].values.tolist() == ["laplace"]
    # ArviZ works unchanged on the reloaded private trace.
    summary = az.summary(loaded, var_names=["p"])
    assert summary.shape[0] == 3 and np.isfinite(az.rhat(loaded)["p"].to_numpy()).all()


@pytest.mark.integration
def test_trace_never_contains_raw_records(tmp_path):
    rng = np.random.default_rng(11)
    n = 257
    groups = rng.integers(0, 3, n)
    # n = 257 is a length nothing else has: no array in the trace may have a record axis.
    y = rng.integers(0, 2, n)
    with pm.Model(coords={"g": ["a", "b", "c"]}):
        idx = pm.Data("group_index", groups)
        p = pm.Beta("p", 1, 1, dims="g")
        pm.Bernoulli("y", p=p[idx], observed=y)
        idata = pymc_dp.sample(30, epsilon=1.0, idata_kwargs={"log_likelihood": True}, **FAST)
    path = tmp_path / "trace.nc"
    idata.to_netcdf(path, engine="h5netcdf")
    loaded = xr.open_datatree(path, engine="h5netcdf")
    assert set(loaded.children) <= {
        "posterior",
        "sample_stats",
        "released_statistics",
        "privacy_ledger",
    }
    for node in loaded.subtree:
        for var in node.dataset.variables.values():
            assert n not in var.shape, f"{node.path}/{var.name} has a record-length axis"
    assert "group_index" not in loaded.to_dict() and "y" not in loaded.children


# --- refusals ------------------------------------------------------------------------------
def test_non_conjugate_likelihood_is_refused():
    with pm.Model():
        mu = pm.Normal("mu")
        pm.Normal("x", mu, 1, observed=np.zeros(5))
        with pytest.raises(NonPrivateModelError, match="x"):
            pymc_dp.sample(10, epsilon=1.0, **FAST)


def test_prior_feeding_another_variable_is_refused():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.ones(5, int))
        pm.Normal("z", p, 1)
        with pytest.raises(NonPrivateModelError, match="also feeds"):
            pymc_dp.sample(10, epsilon=1.0, **FAST)


def test_logit_parameterised_bernoulli_is_read_per_cell():
    """Once refused ("unsupported likelihood"): a logit link is read through the counts."""
    with pm.Model() as model:
        a = pm.Normal("a")
        pm.Bernoulli("y", logit_p=a, observed=np.ones(5, int))
    link = recognise(model, "laplace").blocks["y"]
    assert link.structure.family.name == "cell-counts" and link.structure.n_groups == 1


def test_per_record_trials_need_a_declared_bound():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Binomial("s", n=np.array([3, 4]), p=p, observed=np.array([1, 2]))
        with pytest.raises(NonPrivateModelError, match="max_trials"):
            pymc_dp.sample(10, epsilon=1.0, **FAST)


# --- bad input: raised before any noise, ledger unchanged ----------------------------------
def _assert_refused(build, error=InvalidPrivateDataError, match=None, epsilon=1.0, **kwargs):
    ledger = PrivacyLedger()
    noise = np.random.default_rng(0)
    state = noise.bit_generator.state
    with build():
        with pytest.raises(error, match=match):
            pymc_dp.sample(
                10,
                epsilon=epsilon,
                ledger=ledger,
                noise_backend="numpy",
                noise_rng=noise,
                **kwargs,
                **FAST,
            )
    assert len(ledger) == 0 and noise.bit_generator.state == state


def _bernoulli(y):
    def build():
        model = pm.Model()
        with model:
            p = pm.Beta("p", 1, 1)
            pm.Bernoulli("outcome", p=p, observed=y)
        return model

    return build


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_nan_is_rejected_not_imputed():
    _assert_refused(_bernoulli(np.array([0.0, np.nan, 1.0])), match="outcome")


def test_outside_support_is_rejected():
    _assert_refused(_bernoulli(np.array([0, 2, 1])), match="outcome")
    _assert_refused(_bernoulli(np.array([0, -1, 1])), match="outcome")


def test_unknown_category_and_group_are_rejected():
    def categorical():
        model = pm.Model()
        with model:
            th = pm.Dirichlet("th", np.ones(3))
            # 4 records, K = 3: a record-length axis would make the (3,) concentration private
            pm.Categorical("reason", p=th, observed=np.array([0, 1, 3, 2]))
        return model

    _assert_refused(categorical, match="reason")

    def bad_group_label():
        model = pm.Model()
        with model:
            p = pm.Beta("p", 1, 1, shape=3)
            pm.Bernoulli("y", p=p[np.array([0, 1, 2, 7])], observed=np.ones(4, int))
        return model

    _assert_refused(bad_group_label, match="group labels")


def test_binomial_above_max_trials_is_rejected():
    def build():
        model = pm.Model()
        with model:
            p = pm.Beta("p", 1, 1)
            pm.Binomial("s", n=np.array([3, 9]), p=p, observed=np.array([1, 8]))
        return model

    _assert_refused(build, match="s", max_trials={"s": 5})


@pytest.mark.parametrize("epsilon", [0.0, -1.0, np.nan, np.inf])
def test_invalid_epsilon_is_rejected(epsilon):
    _assert_refused(_bernoulli(np.array([0, 1])), error=ValueError, epsilon=epsilon)


def test_exact_reference_matches_closed_form():
    model, y, groups = grouped_bernoulli(n=600)
    ref = exact_conjugate_posterior(model, draws=4000, chains=1, rng=0)
    s = np.bincount(groups, weights=y, minlength=3)
    f = np.bincount(groups, weights=1 - y, minlength=3)
    np.testing.assert_allclose(
        ref.posterior["p"].mean(("chain", "draw")), (2 + s) / (5 + s + f), atol=0.005
    )
