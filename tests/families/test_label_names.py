"""A release read per group names its group-label arrays in the ledger event: they are
private arrays the release reads, beside the records and the binned covariates."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_dp import PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.mechanisms.statistics import release_bounded

_RNG = np.random.default_rng(0)
_G = _RNG.integers(0, 3, 300)
_H = _RNG.integers(0, 2, 300)
_Y = np.minimum(_RNG.poisson(2.0, 300), 10)


def _poisson_indexed():
    with pm.Model() as model:
        county = pm.Data("county", _G)
        rate = pm.Gamma("rate", 2.0, 1.0, shape=3)
        pm.Poisson("y", rate[county], observed=_Y)
    return model, {"y": (0, 10)}


def _poisson_constant_through_a_link():
    with pm.Model() as model:
        a = pm.Normal("a", shape=3)
        pm.Poisson("y", pm.math.exp(a[_G]), observed=_Y)
    return model, {"y": (0, 10)}


def _logistic_two_labels():
    with pm.Model() as model:
        county, floor = pm.Data("county", _G), pm.Data("floor", _H)
        a, b = pm.Normal("a", shape=3), pm.Normal("b", shape=2)
        pm.Bernoulli("y", logit_p=a[county] + b[floor], observed=(_Y > 2).astype(int))
    return model, {}


def _normal_group_means():
    with pm.Model() as model:
        county = pm.Data("county", _G)
        theta = pm.Normal("theta", shape=3)
        pm.Normal("y", theta[county], 1.0, observed=_Y * 0.5)
    return model, {"y": (-6, 6)}


@pytest.mark.parametrize(
    ("build", "labels"),
    [
        (_poisson_indexed, ("county",)),
        (_poisson_constant_through_a_link, ("y_group_labels",)),
        (_logistic_two_labels, ("county", "floor")),
        (_normal_group_means, ("county",)),
    ],
    ids=["poisson indexed", "poisson constant labels", "logistic two labels", "group means"],
)
def test_the_event_names_the_label_arrays_the_release_reads(build, labels):
    model, bounds = build()
    link = recognise(model, "laplace", data_bounds=bounds).blocks["y"]
    assert link.structure.labels == labels
    ledger = PrivacyLedger(budget=1.0)
    release_bounded(link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(1))
    [event] = ledger.events
    assert event.variables[0] == "y"
    assert set(labels) <= set(event.variables)
    assert len(set(event.variables)) == len(event.variables)


def test_an_ungrouped_release_names_no_labels():
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("y", rate, observed=_Y)
    link = recognise(model, "laplace", data_bounds={"y": (0, 10)}).blocks["y"]
    ledger = PrivacyLedger(budget=1.0)
    release_bounded(link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(1))
    assert ledger.events[0].variables == ("y",)
