"""nuts_sampler="nutpie": nutpie's NUTS on a bounded family's private model, compiled once
(pymc_dp.routes.nutpie_nuts). Refusals run in the fast tier (nothing compiles); sampling
compiles the model with numba for seconds and runs in the integration tier."""

from __future__ import annotations

import functools
import inspect
import logging

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.routes import compiled
from pymc_dp.routes.nutpie_nuts import (
    NUTPIE_OPTIONS,
    _adaptation,
    _pymc_layout,
    nutpie_installed,
)

pytestmark = pytest.mark.skipif(not nutpie_installed(), reason="needs nutpie")

BOUNDS = {"y": (0, 10)}


def counts(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    return group, np.minimum(rng.poisson(np.array([1.0, 2.5, 4.0])[group]), 10)


def poisson_model(group: np.ndarray, y: np.ndarray) -> pm.Model:
    """Grouped Poisson rates: the private counts per group integrated out (the family's
    noise-aware model), a Deterministic beside the rates."""
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        rate = pm.Gamma("rate", 2.0, 1.0, dims="group")
        pm.Deterministic("log_rate", pm.math.log(rate), dims="group")
        pm.Poisson("y", rate[group], observed=y)
    return model


@pytest.fixture(autouse=True)
def empty_cache():
    compiled.clear_compiled_models()
    yield
    compiled.clear_compiled_models()


def _refused_before_release(model, match, **options):
    """pymc_dp.sample raises ValueError matching ``match`` and charges nothing."""
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match=match):
        pymc_dp.sample(
            10,
            model=model,
            epsilon=1.0,
            data_bounds=BOUNDS,
            ledger=ledger,
            nuts_sampler="nutpie",
            **options,
        )
    assert len(ledger) == 0


@pytest.mark.parametrize(
    "options",
    [
        {"callback": lambda trace, draw: None},
        {"init": "advi+adapt_diag"},
        {"init": "adapt_diag"},
        {"tune": 0},
        {"nuts": {"step_scale": 0.5}},
        {"discard_tuned_samples": False},
        {"initvals": [{"rate": np.ones(3)}, {"rate": np.ones(3)}]},
        {"idata_kwargs": {"log_likelihood": False}},
    ],
    ids=lambda o: next(iter(o)),
)
def test_options_nutpie_cannot_honour_are_refused_before_the_release(options):
    (name,) = options
    _refused_before_release(poisson_model(*counts()), r"nuts_sampler='nutpie'|" + name, **options)


def test_nutpie_is_refused_on_a_model_with_a_private_step_before_the_release():
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p, observed=np.random.default_rng(0).binomial(1, 0.3, 200))
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match="bounded families' releases only"):
        pymc_dp.sample(10, model=model, epsilon=1.0, ledger=ledger, nuts_sampler="nutpie")
    assert len(ledger) == 0


def test_every_option_nutpie_takes_is_a_pm_sample_option_or_ours():
    known = set(inspect.signature(pm.sample).parameters) | {"target_accept", "nuts"}
    assert NUTPIE_OPTIONS <= known


def test_init_chooses_nutpies_mass_matrix():
    assert _adaptation("auto") == _adaptation("jitter+adapt_diag") == "diag"
    assert _adaptation("jitter+adapt_full") == "low_rank"


def test_the_trace_takes_pymcs_names_and_drops_what_is_not_per_draw():
    draws = {"chain": 2, "draw": 3}
    posterior = xr.Dataset(
        {"a": (("chain", "draw"), np.zeros((2, 3))), "b": (("chain", "draw"), np.ones((2, 3)))}
    )
    stats = xr.Dataset(
        {
            "depth": (("chain", "draw"), np.full((2, 3), 4)),
            "maxdepth_reached": (("chain", "draw"), np.zeros((2, 3), bool)),
            "mean_tree_accept": (("chain", "draw"), np.full((2, 3), 0.8)),
            "logp": (("chain", "draw"), np.full((2, 3), -1.0)),
            "diverging": (("chain", "draw"), np.zeros((2, 3), bool)),
            "gradient": (("chain", "draw", "unconstrained"), np.zeros((2, 3, 5))),
        }
    )
    assert dict(posterior.sizes) == draws
    raw = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats, "warmup": stats})
    trace = _pymc_layout(raw, ["a"], 1.5, 100)
    assert sorted(trace.children) == ["posterior", "sample_stats"]
    assert list(trace["posterior"].data_vars) == ["a"]
    assert sorted(trace["sample_stats"].data_vars) == [
        "acceptance_rate",
        "diverging",
        "lp",
        "reached_max_treedepth",
        "tree_depth",
    ]
    assert trace["posterior"].attrs["inference_library"] == "nutpie"
    assert trace["sample_stats"].attrs["tuning_steps"] == 100


def _sample(model, seed: int, draws: int = 500, **options):
    """The same release (seeded NumPy noise) whatever the sampler."""
    with model:
        return pymc_dp.sample(
            draws,
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
def test_nutpie_trace_has_pymcs_layout_is_certified_and_charged_once(tmp_path):
    ledger = PrivacyLedger(budget=2.0)
    idata = _sample(poisson_model(*counts()), 3, nuts_sampler="nutpie", ledger=ledger)
    assert sorted(idata.children) == [
        "posterior",
        "privacy_ledger",
        "released_statistics",
        "sample_stats",
    ]
    posterior = idata["posterior"]
    assert sorted(posterior.data_vars) == ["log_rate", "rate"]
    assert posterior["rate"].dims == ("chain", "draw", "group")
    assert posterior["rate"].shape == (2, 500, 3)
    assert list(posterior["group"].values) == ["a", "b", "c"]
    assert np.allclose(posterior["log_rate"], np.log(posterior["rate"]))
    assert posterior.attrs["inference_library"] == "nutpie"
    stats = idata["sample_stats"]
    for name in ("diverging", "energy", "tree_depth", "n_steps", "step_size", "lp"):
        assert stats[name].shape == (2, 500), name
    assert len(ledger) == 1 and ledger.epsilon == pytest.approx(1.0)
    pymc_dp.to_netcdf(idata, tmp_path / "trace.nc")  # certified like a PyMC trace


@pytest.mark.integration
def test_nutpie_and_pymc_sample_the_same_posterior_of_one_release():
    """Same release (seeded noise): the two samplers' posterior means agree within 5 Monte
    Carlo standard errors (each from ArviZ's ESS), sds within 15%."""
    import arviz as az

    theirs = _sample(poisson_model(*counts()), 7, 2000, nuts_sampler="pymc")
    ours = _sample(poisson_model(*counts()), 7, 2000, nuts_sampler="nutpie")
    assert np.array_equal(
        theirs["released_statistics"]["y"].values, ours["released_statistics"]["y"].values
    )
    a, b = theirs["posterior"]["rate"], ours["posterior"]["rate"]
    error = np.hypot(
        az.mcse(theirs, var_names=["rate"])["rate"].values,
        az.mcse(ours, var_names=["rate"])["rate"].values,
    )
    mean_a = a.mean(("chain", "draw")).values
    mean_b = b.mean(("chain", "draw")).values
    assert np.all(np.abs(mean_a - mean_b) < 5 * error)
    sd_a, sd_b = a.std(("chain", "draw")).values, b.std(("chain", "draw")).values
    assert np.allclose(sd_b, sd_a, rtol=0.15)


def _arrays_holding(root, released: np.ndarray) -> list:
    """Floating-point arrays reachable from ``root`` (through attributes, containers and
    closures; not through modules or classes) that hold every value of ``released``."""
    import gc
    import types

    wanted = np.round(np.asarray(released, dtype=np.float64).ravel(), 9)
    seen, stack, found = set(), [root], []
    while stack and len(seen) < 500_000:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        try:
            if isinstance(item, types.ModuleType | type):
                continue
            if isinstance(item, dict) and "__builtins__" in item:
                continue  # a module's globals
            if isinstance(item, np.ndarray) and item.dtype.kind == "f" and 0 < item.size < 10_000:
                if np.isin(wanted, np.round(item.ravel(), 9)).all():
                    found.append(item)
        except ReferenceError:  # a weak proxy whose object is gone: holds nothing
            continue
        stack.extend(gc.get_referents(item))
    return found


@pytest.mark.integration
def test_second_call_reuses_the_compiled_model_with_its_own_release(caplog):
    caplog.set_level(logging.INFO, logger="pymc_dp")
    first = _sample(poisson_model(*counts()), 11, nuts_sampler="nutpie")
    assert any("(numba, by nutpie)" in r.getMessage() for r in caplog.records)
    [entry] = compiled.kept_models()
    runner = entry.nutpie_runner
    assert runner is not None
    held = {
        var.name: runner.compiled.shared_data[key]
        for var, key in runner.compiled.shared_var_keys.items()
        if var.name in runner.containers
    }
    assert sorted(held) == runner.containers  # the release is data of the compiled model …
    for name, values in held.items():  # … and none is kept between calls
        assert np.all(np.isnan(values)), name
    caplog.clear()
    # nor anywhere else reachable from the runner (nutpie's numba functions keep the shared
    # values they were compiled with in closures): the runner compiled from NaN
    assert not _arrays_holding(runner, first["released_statistics"]["y"].values)
    # another model of the same structure, other records (rates doubled), the same seeds
    group, y = counts(seed=5)
    second = _sample(poisson_model(group, np.minimum(2 * y, 10)), 11, nuts_sampler="nutpie")
    assert not any("Compiling" in r.getMessage() for r in caplog.records)
    assert compiled.kept_models()[0].nutpie_runner is runner
    for container in entry.model.data_vars:
        assert np.all(np.isnan(np.asarray(container.get_value()))), container.name
    # the second release, not the first, informs the second posterior
    ratio = second["posterior"]["rate"].mean(("chain", "draw")) / first["posterior"][
        "rate"
    ].mean(("chain", "draw"))
    assert np.all(ratio.values > 1.5)
    again = _sample(poisson_model(group, np.minimum(2 * y, 10)), 11, nuts_sampler="nutpie")
    assert np.array_equal(second["posterior"]["rate"], again["posterior"]["rate"])


class _Chosen(Exception):
    """Raised by the stubbed samplers: which one the route called."""


@pytest.fixture
def which_sampler(monkeypatch):
    """Stub both samplers of the compiled route (nothing compiles): the test reads the
    ``ReleasedRunFailedError``'s cause to see which was called."""
    import pymc_dp.routes.laplace as route

    def nutpie_stub(*args, **kwargs):
        raise _Chosen("nutpie")

    @functools.wraps(pm.sample)  # the options are checked against its signature
    def pymc_stub(*args, **kwargs):
        raise _Chosen("pymc")

    monkeypatch.setattr(route, "NutpieRunner", lambda model: None)
    monkeypatch.setattr(route, "sample_nutpie", nutpie_stub)
    monkeypatch.setattr(pm, "sample", pymc_stub)

    def run(model, **options):
        options.setdefault("data_bounds", BOUNDS)
        with pytest.raises(pymc_dp.ReleasedRunFailedError) as failed:
            pymc_dp.sample(10, model=model, epsilon=1.0, **options)
        assert isinstance(failed.value.__cause__, _Chosen)
        return str(failed.value.__cause__)

    return run


def test_nutpie_is_the_default_for_bounded_families_and_pymc_otherwise(which_sampler):
    assert which_sampler(poisson_model(*counts())) == "nutpie"
    assert which_sampler(poisson_model(*counts()), inference="plugin") == "nutpie"
    assert which_sampler(poisson_model(*counts()), nuts_sampler="pymc") == "pymc"
    # an option nutpie does not honour: PyMC's NUTS, not a refusal
    assert which_sampler(poisson_model(*counts()), callback=lambda trace, draw: None) == "pymc"
    assert which_sampler(poisson_model(*counts()), discard_tuned_samples=False) == "pymc"
    assert which_sampler(poisson_model(*counts()), init="adapt_diag") == "pymc"  # unjittered
    with pm.Model() as conjugate:  # a conjugate release beside a bounded one: PyMC's steps
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("z", p, observed=np.random.default_rng(0).binomial(1, 0.3, 200))
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("y", rate, observed=counts()[1])
    assert which_sampler(conjugate) == "pymc"


def test_without_nutpie_the_default_is_pymc_and_asking_for_it_is_refused(
    which_sampler, monkeypatch
):
    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    assert which_sampler(poisson_model(*counts())) == "pymc"
    _refused_before_release(poisson_model(*counts()), "needs the nutpie package")
