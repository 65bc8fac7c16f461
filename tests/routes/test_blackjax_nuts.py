"""nuts_sampler="blackjax": BlackJAX's NUTS on a bounded family's private model, compiled once
(pymc_dp.routes.blackjax_nuts). Refusals run in the fast tier (nothing compiles); sampling
compiles JAX functions for seconds and runs in the integration tier."""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.routes import compiled
from pymc_dp.routes.blackjax_nuts import BLACKJAX_OPTIONS, blackjax_installed

pytestmark = pytest.mark.skipif(not blackjax_installed(), reason="needs jax and blackjax")

BOUNDS = {"x": (0.0, 10.0)}


def records(n: int = 400, seed: int = 0) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).normal(4.0, 1.5, n), 0.0, 10.0)


def normal_model(x: np.ndarray) -> pm.Model:
    with pm.Model(coords={"unused": ["a", "b"]}) as model:
        mu = pm.Normal("mu", 5.0, 5.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Deterministic("precision", 1.0 / sigma**2)
        pm.Normal("x", mu, sigma, observed=x)
    return model


@pytest.fixture(autouse=True)
def empty_cache():
    compiled.clear_compiled_models()
    yield
    compiled.clear_compiled_models()


def _refused_before_release(model, match, sampler="blackjax", **options):
    """pymc_dp.sample raises ValueError matching ``match`` and charges nothing."""
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match=match):
        pymc_dp.sample(
            10,
            model=model,
            epsilon=1.0,
            data_bounds=BOUNDS,
            ledger=ledger,
            nuts_sampler=sampler,
            **options,
        )
    assert len(ledger) == 0


@pytest.mark.parametrize(
    "options",
    [
        {"callback": lambda trace, draw: None},
        {"init": "advi+adapt_diag"},
        {"tune": 0},
        {"nuts": {"step_scale": 0.5}},
        {"discard_tuned_samples": False},
        {"idata_kwargs": {"log_likelihood": False}},
        {"n_init": 100},
    ],
    ids=lambda o: next(iter(o)),
)
def test_options_blackjax_cannot_honour_are_refused_before_the_release(options):
    (name,) = options
    _refused_before_release(normal_model(records()), r"nuts_sampler='blackjax'|" + name, **options)


def test_blackjax_is_refused_on_a_model_with_a_private_step_before_the_release():
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p, observed=np.random.default_rng(0).binomial(1, 0.3, 200))
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match=r"\['linear-regression', 'normal'\] only"):
        pymc_dp.sample(10, model=model, epsilon=1.0, ledger=ledger, nuts_sampler="blackjax")
    assert len(ledger) == 0


def test_blackjax_is_refused_on_a_poisson_likelihood_before_the_release():
    """The Poisson's noise-aware log density sums over a window of counts whose length is
    read from the release: JAX cannot compile it, and the run would fail after charging."""
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("y", rate, observed=np.random.default_rng(0).poisson(2.0, 300))
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match=r"likelihoods of \['poisson'\]"):
        pymc_dp.sample(
            10,
            model=model,
            epsilon=1.0,
            data_bounds={"y": (0, 10)},
            ledger=ledger,
            nuts_sampler="blackjax",
        )
    assert len(ledger) == 0


def test_another_nuts_sampler_names_the_ones_taken():
    with pytest.raises(ValueError, match=r"\('pymc', 'blackjax', 'nutpie'\)"):
        pymc_dp.sample(
            10,
            model=normal_model(records()),
            epsilon=1.0,
            data_bounds=BOUNDS,
            nuts_sampler="numpyro",
        )


def test_every_option_blackjax_takes_is_a_pm_sample_option_or_ours():
    import inspect

    known = set(inspect.signature(pm.sample).parameters) | {"target_accept", "nuts"}
    assert BLACKJAX_OPTIONS <= known


def _sample(model, seed: int, **options):
    """The same release (seeded NumPy noise) whatever the sampler."""
    with model:
        return pymc_dp.sample(
            500,
            tune=500,
            chains=2,
            epsilon=1.0,
            data_bounds=BOUNDS,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(seed),
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **options,
        )


@pytest.mark.integration
def test_blackjax_trace_has_pymcs_layout_is_certified_and_charged_once(tmp_path):
    ledger = PrivacyLedger(budget=2.0)
    idata = _sample(normal_model(records()), 3, nuts_sampler="blackjax", ledger=ledger)
    assert sorted(idata.children) == [
        "posterior",
        "privacy_ledger",
        "released_statistics",
        "sample_stats",
    ]
    posterior = idata["posterior"]
    assert sorted(posterior.data_vars) == ["mu", "precision", "sigma"]
    assert posterior["mu"].shape == (2, 500)
    assert np.allclose(posterior["precision"], 1.0 / posterior["sigma"] ** 2)
    assert posterior.attrs["inference_library"] == "blackjax"
    stats = idata["sample_stats"]
    for name in ("diverging", "energy", "tree_depth", "n_steps", "acceptance_rate", "lp"):
        assert stats[name].shape == (2, 500), name
    assert stats["diverging"].dtype == bool
    assert len(ledger) == 1 and ledger.epsilon == pytest.approx(1.0)
    pymc_dp.to_netcdf(idata, tmp_path / "trace.nc")  # certified like a PyMC trace


@pytest.mark.integration
def test_blackjax_and_pymc_sample_the_same_posterior_of_one_release():
    """Same release (seeded noise): the two samplers' posterior means agree within 5 Monte
    Carlo standard errors (each from ArviZ's ESS), sds within 15%."""
    import arviz as az

    theirs = _sample(normal_model(records()), 7, nuts_sampler="pymc")
    ours = _sample(normal_model(records()), 7, nuts_sampler="blackjax")
    assert np.array_equal(
        theirs["released_statistics"]["x"].values, ours["released_statistics"]["x"].values
    )
    for name in ("mu", "sigma"):
        a, b = theirs["posterior"][name], ours["posterior"][name]
        error = np.hypot(
            float(az.mcse(theirs, var_names=[name])[name]),
            float(az.mcse(ours, var_names=[name])[name]),
        )
        assert abs(float(a.mean()) - float(b.mean())) < 5 * error, name
        assert float(b.std()) == pytest.approx(float(a.std()), rel=0.15), name


@pytest.mark.integration
def test_second_call_reuses_the_compiled_chain_and_is_reproducible(caplog):
    caplog.set_level(logging.INFO, logger="pymc_dp")
    first = _sample(normal_model(records()), 11, nuts_sampler="blackjax")
    assert any("(JAX)" in r.getMessage() for r in caplog.records)
    [entry] = compiled.kept_models()
    runner = entry.blackjax_runner
    assert runner is not None and len(runner._chains) == 1
    caplog.clear()
    # another model of the same structure, other records, the same seeds
    second = _sample(normal_model(records(seed=5)), 11, nuts_sampler="blackjax")
    assert not any("Compiling" in r.getMessage() for r in caplog.records)
    assert compiled.kept_models()[0].blackjax_runner is runner and len(runner._chains) == 1
    for container in entry.model.data_vars:  # no release kept between calls
        assert np.all(np.isnan(np.asarray(container.get_value()))), container.name
    assert not np.array_equal(first["posterior"]["mu"], second["posterior"]["mu"])
    again = _sample(normal_model(records(seed=5)), 11, nuts_sampler="blackjax")
    assert np.array_equal(second["posterior"]["mu"], again["posterior"]["mu"])


@pytest.mark.integration
def test_blackjax_samples_a_regression_with_a_private_count_as_pymc_would():
    """Linear regression, add-remove-one (n latent): the posterior holds the variables PyMC's
    NUTS gives (the parameters, the covariate model, the noise variances, the count)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (300, 2))
    y = np.clip(X @ [1.0, -1.0] + rng.normal(0.0, 0.5, 300), -5.0, 5.0)
    with pm.Model():
        covariates = pm.Data("X", X)
        b = pm.Normal("b", 0.0, 2.0, shape=2)
        a = pm.Normal("a", 0.0, 2.0)
        pm.Normal("y", a + covariates @ b, pm.HalfNormal("s", 2.0), observed=y)
        idata = pymc_dp.sample(
            200,
            tune=200,
            chains=1,
            epsilon=1.0,
            data_bounds={"y": (-5.0, 5.0), "X": (0.0, 1.0)},
            neighbouring="add-remove-one",
            nuts_sampler="blackjax",
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert sorted(idata["posterior"].data_vars) == [
        "a",
        "b",
        "s",
        "y_covariate_corr_chol",
        "y_covariate_mean",
        "y_covariate_sd",
        "y_covariate_spread",
        "y_n_records",
        "y_n_records_offset",
        "y_noise_variance",
    ]
    assert idata["posterior"]["b"].shape == (1, 200, 2)


def test_blackjax_takes_the_familys_target_accept_but_not_its_dense_mass_matrix():
    """The regression asks PyMC for a dense mass matrix; BlackJAX's windowed dense estimate
    lost a chain in the calibration study (docs/calibration.md), so it keeps the diagonal."""
    from types import SimpleNamespace

    from pymc_dp.families import BOUNDED_FAMILIES
    from pymc_dp.mechanisms.statistics import BoundedRelease
    from pymc_dp.routes.laplace import _noise_aware_sampler_defaults

    family = BOUNDED_FAMILIES["linear-regression"]
    release = BoundedRelease.__new__(BoundedRelease)
    object.__setattr__(release, "structure", SimpleNamespace(family=family))
    object.__setattr__(release, "public_n", np.array([100.0]))  # replace-one: no latent n
    family_options = family.noise_aware_sampler
    assert family_options["init"] == "jitter+adapt_full"
    for sampler, init in (("pymc", "jitter+adapt_full"), ("blackjax", None)):
        kwargs = {"nuts_sampler": sampler}
        _noise_aware_sampler_defaults(kwargs, [release])
        assert kwargs["target_accept"] == family_options["target_accept"]
        assert kwargs.get("init") == init, sampler


def test_a_discrete_free_variable_is_refused_before_the_release():
    model = normal_model(records())
    with model:
        pm.Bernoulli("z", 0.3)
    _refused_before_release(model, r"continuous variables only; \['z'\]")


def test_an_operation_jax_cannot_compile_is_refused_before_the_release():
    import pytensor.tensor as pt

    model = normal_model(records())
    with model:
        pm.Deterministic("r", pt.round(model["mu"], mode="half_away_from_zero"))
    _refused_before_release(model, "operation JAX cannot compile")


@pytest.mark.parametrize(
    "options",
    [
        {"nuts": {"max_treedepth": 0}},
        {"nuts": {"max_treedepth": "x"}},
        {"nuts": {"target_accept": None}},
        {"nuts": {"target_accept": 1.5}},
        {"nuts": {"target_accept": "0.9"}},
        {"initvals": {"sigma": -1.0}},
        {"initvals": {"mu": np.nan}},
        {"var_names": ["precision"]},
    ],
    ids=repr,
)
@pytest.mark.parametrize("sampler", ["pymc", "blackjax"])
def test_values_that_would_fail_after_the_release_are_refused_before_it(options, sampler):
    (name,) = options
    _refused_before_release(normal_model(records()), name, sampler=sampler, **options)


def test_seeds_are_derived_per_chain_as_pm_sample_derives_them():
    from pymc_dp.routes.chains import chain_count, chain_seeds

    assert len(chain_seeds([1, 2, 3], 4)) == 4 and len(chain_seeds([2**70], 2)) == 2
    assert all(0 <= s < 2**30 for s in chain_seeds(2**63, 3))
    assert chain_seeds(5, 2) == chain_seeds(5, 2) != chain_seeds(6, 2)
    assert chain_count({"chains": 3}) == 3 and chain_count({"cores": 1}) == 2
