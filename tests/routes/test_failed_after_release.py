"""A run that fails after its release says what it spent (review finding 5).

With ``data_bounds`` too wide for float64, both releases were charged and then NUTS failed
("Bad initial energy"): ε spent, no trace, and an error that did not say so. A failure that
no check before the charge can exclude now raises :class:`pymc_dp.ReleasedRunFailedError`
naming the events, ε and δ spent, with the sampler's error chained.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import PrivacyLedger, ReleasedRunFailedError

VALUES = np.array([0.2, 0.9, 0.4, 0.7, 0.5, 0.3])


def _fail_pm_sample(monkeypatch):
    """``pm.sample`` fails as NUTS does at a non-finite initial energy (after the charge)."""

    @functools.wraps(pm.sample)
    def failing(*args, **kwargs):
        raise pm.exceptions.SamplingError("Bad initial energy")

    monkeypatch.setattr(pm, "sample", failing)  # with nutpie off every route calls pm.sample

    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)


def _two_normals():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu=mu, sigma=1.0, observed=VALUES)
        pm.Normal("z", mu=mu, sigma=1.0, observed=VALUES[::-1].copy())
    return model


def test_a_failure_after_the_releases_names_what_was_spent(monkeypatch):
    _fail_pm_sample(monkeypatch)
    ledger = PrivacyLedger()
    with pytest.raises(ReleasedRunFailedError) as failed:
        pymc_dp.sample(
            5,
            model=_two_normals(),
            epsilon=1.0,
            data_bounds={"y": (0.0, 1.0), "z": (0.0, 1.0)},
            ledger=ledger,
            progressbar=False,
        )
    error = failed.value
    assert len(ledger) == 2 and error.events == ledger.events  # the spend stands
    message = str(error)
    assert "failed after its release (SamplingError" in message
    assert "2 event(s) were charged, epsilon=1, delta=0" in message
    assert "laplace on y; laplace on z" in message
    assert isinstance(error.__cause__, pm.exceptions.SamplingError)
    assert not any(f"{v:g}" in message for v in VALUES)


def test_a_refusal_before_the_charge_is_not_wrapped(monkeypatch):
    _fail_pm_sample(monkeypatch)
    ledger = PrivacyLedger(budget=0.5)
    with pytest.raises(pymc_dp.BudgetExceededError):
        pymc_dp.sample(
            5,
            model=_two_normals(),
            epsilon=1.0,
            data_bounds={"y": (0.0, 1.0), "z": (0.0, 1.0)},
            ledger=ledger,
            progressbar=False,
        )
    assert len(ledger) == 0


# --- bounds too wide for float64 are refused before the charge -------------------------------

NEAR = np.array([9.0e153, 9.9e153, 9.5e153])  # records near the declared bound 1e154


def _normal(values, truncated=False):
    with pm.Model() as model:
        mu = (
            pm.TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=1.0)
            if truncated
            else pm.Normal("mu", 0.0, 1.0)
        )
        pm.Normal("y", mu=mu, sigma=1.0, observed=values)
    return model


@pytest.mark.parametrize("mechanism", ["laplace", "ops"])
def test_bounds_too_wide_for_float64_are_refused_before_anything_is_charged(mechanism):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"data_bounds\['y'\] reach 1e\+154 .* overflows"):
        pymc_dp.sample(
            5,
            model=_normal(NEAR, truncated=mechanism == "ops"),
            epsilon=1.0,
            mechanism=mechanism,
            data_bounds={"y": (0.0, 1e154)},
            ledger=ledger,
            progressbar=False,
        )
    assert len(ledger) == 0


def test_bounds_within_the_headroom_are_accepted():
    from pymc_dp.analysis import recognise

    recognised = recognise(_normal(NEAR / 1e4), "laplace", data_bounds={"y": (0.0, 1e150)})
    assert set(recognised.blocks) == {"y"}


# --- public data read by a parameter (adversarial review, 2026-12-07) -------------------------

_RNG = np.random.default_rng(7)
_N, _G = 60, 3
_LABELS = np.arange(_N) % _G
_XG = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # a public group-level design
_SG = np.array([0.8, 1.0, 1.3])  # public per-group sds


def _public_parameter_data(form):
    """(model, data_bounds, the public names) where a parameter reads declared-public data
    that only the observed likelihood reads."""
    with pm.Model() as model:
        if form == "scaled mean":
            s = pm.Data("s", 2.0)
            pm.Normal(
                "y", pm.Normal("mu") * s, pm.HalfNormal("sd"), observed=_RNG.uniform(0, 2, _N)
            )
            return model, {"y": (0.0, 2.0)}, ["s"]
        g = pm.Data("g", _LABELS)  # private labels
        xg = pm.Data("xg", _XG)
        b = pm.Normal("b", shape=2)
        if form == "group means, group-level design":
            sd = pm.HalfNormal("sd")
            pm.Normal("y", (xg @ b)[g], sd, observed=_RNG.normal(size=_N))
            return model, {"y": (-5.0, 5.0)}, ["xg"]
        if form == "poisson, group-level design":
            pm.Poisson("y", pm.math.exp(xg @ b)[g], observed=_RNG.poisson(2.0, _N))
            return model, {"y": (0, 10)}, ["xg"]
        if form == "logistic cells, group-level design":
            pm.Bernoulli("y", logit_p=(xg @ b)[g], observed=_RNG.integers(0, 2, _N))
            return model, {}, ["xg"]
        sg = pm.Data("sg", _SG)
        pm.Normal("y", b[0], sg[g], observed=_RNG.normal(size=_N))
        return model, {"y": (-5.0, 5.0)}, ["sg"]


@pytest.mark.parametrize(
    "form",
    [
        "scaled mean",
        "group means, group-level design",
        "poisson, group-level design",
        "logistic cells, group-level design",
        "public sd per group",
    ],
)
def test_public_data_a_parameter_reads_is_kept_in_the_private_model(monkeypatch, form):
    """Was: charged, then 'its parameters read s, which the private model does not hold'
    (ReleasedRunFailedError). The clone dropped the declared-public container because only the
    observed likelihood read it; the private model now keeps it, with its value."""
    captured = {}

    @functools.wraps(pm.sample)
    def stub(*args, **kwargs):
        captured["model"] = kwargs.get("model") or pm.modelcontext(None)
        raise pm.exceptions.SamplingError("stopped by the test")

    monkeypatch.setattr(pm, "sample", stub)

    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    model, bounds, public = _public_parameter_data(form)
    ledger = PrivacyLedger()
    with pytest.raises(ReleasedRunFailedError) as failed:
        pymc_dp.sample(
            5, model=model, epsilon=1.0, data_bounds=bounds, public=public, ledger=ledger
        )
    assert isinstance(failed.value.__cause__, pm.exceptions.SamplingError)  # reached sampling
    private = captured["model"]
    for name in public:
        np.testing.assert_array_equal(private[name].get_value(), model[name].get_value())
    assert "g" not in private.named_vars  # the private labels are not kept
    assert not private.observed_RVs


def test_a_public_container_not_declared_public_is_still_refused_before_the_charge():
    model, bounds, _ = _public_parameter_data("scaled mean")
    ledger = PrivacyLedger()
    with pytest.raises(pymc_dp.NonPrivateModelError, match="'s'"):
        pymc_dp.sample(5, model=model, epsilon=1.0, data_bounds=bounds, ledger=ledger)
    assert len(ledger) == 0


@pytest.mark.integration
def test_a_scaled_mean_with_public_data_samples_the_records_mean():
    """At ε = 10⁴ the posterior of mu · s is near the records' mean (60 records, sd ≈ 0.58:
    the posterior sd of the mean is about 0.075)."""
    model, bounds, public = _public_parameter_data("scaled mean")
    with model:
        idata = pymc_dp.sample(
            500,
            tune=500,
            chains=1,
            epsilon=1e4,
            data_bounds=bounds,
            public=public,
            random_seed=3,
            progressbar=False,
        )
    records_mean = float(np.mean(model.rvs_to_values[model["y"]].data))
    draws = 2.0 * idata["posterior"]["mu"].values.reshape(-1)
    assert abs(draws.mean() - records_mean) < 0.05
