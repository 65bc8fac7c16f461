"""Coordinate values of a dim that indexes records are refused (review finding 2).

``pm.Model(coords={"rec": names})`` with an observed variable (or a record-indexed
Deterministic) on ``rec`` used to put the names into the trace unnoised: ArviZ copies a
model's coordinate values onto every variable of the dim. Only no values or 0..n − 1 pass.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise

OUTCOME = np.array([1, 0, 1, 1, 0])
NAMES = ["ann", "bob", "cyd", "dee", "eve"]  # record-derived coordinate values


def _model(values, dim="rec", deterministic=True, multinomial=False):
    with pm.Model() as model:
        model.add_coord(dim, values, length=OUTCOME.size)
        if multinomial:
            model.add_coord("category", ["yes", "no"])
            shares = pm.Dirichlet("shares", a=pt.ones(2), dims="category")
            votes = np.column_stack([OUTCOME, 1 - OUTCOME])
            pm.Multinomial("y", n=1, p=shares, observed=votes, dims=(dim, "category"))
            return model
        rate = pm.Beta("rate", 1.0, 1.0)
        pm.Bernoulli("y", p=rate, observed=OUTCOME, dims=dim)
        if deterministic:
            pm.Deterministic("per_record", pt.repeat(rate[None], OUTCOME.size), dims=dim)
    return model


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(NAMES, id="names"),
        pytest.param(np.arange(OUTCOME.size) + 1000, id="shifted ids"),
        pytest.param(np.arange(OUTCOME.size)[::-1], id="permuted range"),
    ],
)
def test_record_dim_with_values_is_refused_before_anything_is_charged(values):
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=r"dim 'rec' indexes the records of 'y'") as e:
        pymc_dp.sample(5, epsilon=1.0, model=_model(values), ledger=ledger, progressbar=False)
    assert len(ledger) == 0
    assert not any(name in str(e.value) for name in NAMES) and "1000" not in str(e.value)


@pytest.mark.parametrize("mechanism", ["laplace", "ops"])
def test_every_route_refuses_record_coords(mechanism):
    with pytest.raises(NonPrivateModelError, match="dim 'rec'"):
        recognise(_model(NAMES, deterministic=False), mechanism)


@pytest.mark.parametrize(
    "values", [pytest.param(None, id="absent"), pytest.param(range(5), id="range")]
)
def test_record_dim_without_values_or_with_the_range_is_accepted(values):
    recognised = recognise(_model(values), "laplace")
    assert set(recognised.blocks) == {"y"}


def test_only_record_axes_count_a_multinomial_category_dim_keeps_its_names():
    recognise(_model(None, multinomial=True), "laplace")  # "category" names are public
    with pytest.raises(NonPrivateModelError, match="dim 'rec'"):
        recognise(_model(NAMES, multinomial=True), "laplace")


@pytest.mark.parametrize("kind", ["free", "deterministic"])
def test_a_variable_on_a_record_dim_is_refused_under_add_remove_one(kind):
    """Adversarial review: under add-remove-one n is private, yet a free variable or a
    Deterministic on the observed's record dim put ``rec: n`` into the posterior. Accepted
    before this check (both cases sampled); still accepted under replace-one."""

    def build():
        with pm.Model() as model:
            model.add_coord("rec", length=OUTCOME.size)
            p = pm.Beta("p", 1, 1)
            if kind == "free":
                pm.Normal("z", 0, 1, dims="rec")
            else:
                pm.Deterministic("pp", p * pt.ones(OUTCOME.size), dims="rec")
            pm.Bernoulli("y", p, observed=OUTCOME, dims="rec")
        return model

    with pytest.raises(NonPrivateModelError, match=r"is on dim 'rec', which indexes the records"):
        recognise(build(), "laplace", neighbouring="add-remove-one")
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError):
        pymc_dp.sample(5, model=build(), epsilon=1.0, neighbouring="add-remove-one", ledger=ledger)
    assert len(ledger) == 0
    if kind == "deterministic":
        recognise(build(), "laplace", neighbouring="replace-one")  # n is public there
