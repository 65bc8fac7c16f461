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

    monkeypatch.setattr(pm, "sample", failing)  # every route calls it as pm.sample


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
