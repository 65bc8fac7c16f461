"""Compile once: a second pymc_dp.sample on a model of the same structure reuses the compiled
private model (pymc_dp.routes.compiled), still releases afresh and is charged; the cache's key and
kept models hold no record and, between calls, no released value."""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.analysis.rewrite import build_private_model, use_release
from pymc_dp.mechanisms.statistics import release_bounded
from pymc_dp.routes import compiled

BOUNDS = {"x": (0.0, 10.0)}
# distinctive record values: none of their digits may appear in a key or a kept model
RECORD = 3.14159265358


def records(centre: float, n: int = 300, seed: int = 0) -> np.ndarray:
    x = np.clip(np.random.default_rng(seed).normal(centre, 1.0, n), 0.0, 10.0)
    x[0] = RECORD
    return x


def normal_model(x: np.ndarray, prior_sd: float = 5.0) -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 5.0, prior_sd)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("x", mu, sigma, observed=x)
    return model


def private_of(model: pm.Model, epsilon: float = 1.0, seed: int = 1):
    public = [name for name in ("prior_mean",) if name in model.named_vars]
    link = recognise(model, "laplace", data_bounds=BOUNDS, public=public).blocks["x"]
    release = release_bounded(
        link, epsilon, ledger=PrivacyLedger(), backend="numpy", rng=np.random.default_rng(seed)
    )
    private = build_private_model(model, [release], public=public, inference="noise-aware")
    return private, release


@pytest.fixture(autouse=True)
def empty_cache():
    compiled.clear_compiled_models()
    yield
    compiled.clear_compiled_models()


def test_structure_key_is_the_same_for_other_records_and_differs_for_another_model():
    first, _ = private_of(normal_model(records(2.0)))
    second, _ = private_of(normal_model(records(7.0, seed=5)), epsilon=3.0, seed=9)
    other, _ = private_of(normal_model(records(2.0), prior_sd=2.0))
    key = compiled.structure_key(first)
    assert len(key) == 64 and int(key, 16) >= 0
    assert compiled.structure_key(second) == key
    assert compiled.structure_key(other) != key


def test_the_key_and_a_kept_model_hold_no_record_and_no_release_after_the_call():
    model = normal_model(records(2.0))
    private, release = private_of(model)
    text = compiled.structure_text(private)
    assert "3.14159" not in text
    for value in release.noisy.ravel():
        assert f"{value:.6g}"[:6] not in text
    with compiled.compiled_private_model(private, "a test model") as kept:
        use_release(kept.model, release)
        held = {v.name: np.asarray(v.get_value()) for v in kept.model.data_vars}
        assert np.array_equal(held["x_released_statistics"], release.noisy)
    [entry] = compiled.kept_models()
    assert entry is kept and not entry.in_use
    for container in entry.model.data_vars:  # every released value overwritten
        assert np.all(np.isnan(np.asarray(container.get_value()))), container.name
        tagged = container.tag.__dict__.get("pymc_dp_bounded_release")
        if tagged is not None:
            assert np.all(np.isnan(tagged.noisy)) and np.all(np.isnan(tagged.table))
    assert all("x" != v.name for v in entry.model.data_vars)  # the records never got in


@pytest.mark.integration
def test_the_cache_keeps_at_most_cache_size_models(monkeypatch):
    monkeypatch.setattr(compiled, "CACHE_SIZE", 2)
    for k in range(4):
        private, _ = private_of(normal_model(records(2.0), prior_sd=1.0 + k))
        with compiled.compiled_private_model(private, "a test model"):
            pass
    kept = compiled.kept_models()
    assert len(kept) == 2 and [e.key for e in kept] == [
        compiled.structure_key(private_of(normal_model(records(2.0), prior_sd=sd))[0])
        for sd in (3.0, 4.0)
    ]


@pytest.mark.integration
def test_second_call_compiles_no_log_density_and_releases_and_charges_afresh(monkeypatch, caplog):
    compiled = []
    original = pm.Model.logp_dlogp_function

    def counting(self, *args, **kwargs):
        compiled.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "logp_dlogp_function", counting)
    options = dict(
        tune=200,
        chains=1,
        cores=1,
        progressbar=False,
        compute_convergence_checks=False,
        random_seed=3,
        data_bounds=BOUNDS,
        epsilon=50.0,
        nuts_sampler="pymc",  # counts PyMC's compiled functions (nutpie: test_nutpie_nuts)
    )
    runs = []
    for centre in (2.0, 7.0):  # same structure, other records
        before = len(compiled)
        with normal_model(records(centre)), caplog.at_level(logging.INFO, logger="pymc_dp"):
            caplog.clear()
            idata = pymc_dp.sample(200, **options)
        announced = [r for r in caplog.records if r.getMessage().startswith("Compiling")]
        runs.append((idata, len(compiled) - before, len(announced)))
    (first, compiles_1, said_1), (second, compiles_2, said_2) = runs
    assert compiles_1 >= 1 and compiles_2 == 0
    assert said_1 == 1 and said_2 == 0
    # each call released its own statistics and charged its own event
    for idata in (first, second):
        [event] = PrivacyLedger.from_datatree(idata).events
        assert event.epsilon == pytest.approx(50.0)
    released = [idata["released_statistics"]["x"].values for idata in (first, second)]
    assert not np.allclose(released[0], released[1])
    # and each posterior is its own data's: mean about 2, then about 7 (sd/√n ≈ 0.06)
    means = [float(idata.posterior["mu"].mean()) for idata in (first, second)]
    assert means[0] == pytest.approx(2.0, abs=0.4) and means[1] == pytest.approx(7.0, abs=0.4)


def test_a_model_whose_structure_cannot_be_printed_is_compiled_for_its_call_only(monkeypatch):
    private, _ = private_of(normal_model(records(2.0)))

    def unprintable(model):
        raise TypeError("no printer for this Op")

    monkeypatch.setattr(compiled, "structure_key", unprintable)
    with compiled.compiled_private_model(private, "a test model") as kept:
        assert kept.model is private
    assert compiled.kept_models() == []
    assert np.all(np.isnan(private["x_released_statistics"].get_value()))


def _public_data_model(prior_mean: float, n: int = 300) -> pm.Model:
    with pm.Model(coords={"obs": range(n)}) as model:
        centre = pm.Data("prior_mean", prior_mean)
        mu = pm.Normal("mu", centre, 5.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("x", mu, sigma, observed=records(2.0, n=n), dims="obs")
    return model


def test_models_that_differ_in_a_public_value_get_different_keys():
    """Adversarial review (compile cache): a public ``pm.Data`` value, a public array longer
    than NumPy prints, a constant differing past the 8th digit and a dim length are printed alike,
    so the kept model of the first call sampled the second with the first's values. Failed on
    the printed-graph key (equal keys in every case)."""

    def key(model):
        return compiled.structure_key(private_of(model)[0])

    assert key(_public_data_model(0.0)) != key(_public_data_model(50.0))
    assert key(_public_data_model(0.0, n=300)) != key(_public_data_model(0.0, n=301))

    def long_constant(last: float) -> pm.Model:
        prior_means = np.zeros(2_000)
        prior_means[-1] = last  # NumPy prints 2,000 values with an ellipsis
        with pm.Model() as model:
            mu = pm.Normal("mu", pm.Data("prior_mean", prior_means), 5.0, shape=2_000)
            sigma = pm.HalfNormal("sigma", 5.0)
            pm.Normal("x", mu[0], sigma, observed=records(2.0))
        return model

    assert key(long_constant(0.0)) != key(long_constant(1.0))
    assert key(normal_model(records(2.0), prior_sd=0.123456789)) != key(
        normal_model(records(2.0), prior_sd=0.123456781)
    )
    # the release written into the kept model is not part of the key
    assert key(normal_model(records(2.0))) == compiled.structure_key(
        private_of(normal_model(records(8.0, seed=3)), epsilon=0.3, seed=4)[0]
    )
