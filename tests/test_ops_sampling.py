"""pymc_dp.sample(mechanism="ops") on ordinary models with truncated Beta priors."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp
from pymc_dp import (
    BudgetExceededError,
    InvalidPrivateDataError,
    NonPrivateModelError,
    PrivacyLedger,
)
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.likelihood_bounds import binomial_delta

GROUP = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 0])
OUTCOME = np.array([1, 0, 1, 1, 0, 1, 1, 0, 0, 1])


def _model(truncated=True, data=OUTCOME):
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        if truncated:
            rate = TruncatedBeta("rate", 2.0, 1.0, 0.1, dims="group")
        else:
            rate = pm.Beta("rate", 2.0, 1.0, dims="group")
        pm.Bernoulli("y", p=rate[GROUP], observed=data)
    return model


def test_chain_release_draws_the_tempered_truncated_posterior_exactly():
    draws, epsilon = 4000, 400.0
    idata = pymc_dp.sample(
        draws, model=_model(), epsilon=epsilon, mechanism="ops", release="chain", random_seed=1
    )
    (event,) = PrivacyLedger.from_datatree(idata).events
    delta = math.log(9)
    temperature = 2 * delta * draws / epsilon
    assert event.temperature == pytest.approx(temperature) and event.epsilon == pytest.approx(
        epsilon
    )
    assert not event.assumes_convergence
    group_a = idata["posterior"]["rate"].sel(group="a").values.ravel()
    s, n = OUTCOME[GROUP == 0].sum(), (GROUP == 0).sum()
    target = stats.beta((s + 2 - 1) / temperature + 1, (n - s + 1 - 1) / temperature + 1)
    lo, hi = target.cdf(0.1), target.cdf(0.9)
    assert group_a.min() >= 0.1 and group_a.max() <= 0.9
    assert stats.kstest(group_a, lambda x: (target.cdf(x) - lo) / (hi - lo)).pvalue > 1e-3


def test_last_release_is_one_draw_for_the_whole_epsilon():
    idata = pymc_dp.sample(model=_model(), epsilon=1.0, mechanism="ops", random_seed=2)
    assert idata["posterior"].sizes["draw"] == 1
    (event,) = PrivacyLedger.from_datatree(idata).events
    assert event.temperature == pytest.approx(2 * math.log(9)) and event.epsilon == pytest.approx(
        1.0
    )


def test_budget_is_checked_before_any_draw():
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(BudgetExceededError):
        pymc_dp.sample(
            10, model=_model(), epsilon=2.0, mechanism="ops", release="chain", ledger=ledger
        )
    assert len(ledger) == 0


def test_refusals():
    with pytest.raises(NonPrivateModelError, match="truncated prior"):
        pymc_dp.sample(model=_model(truncated=False), epsilon=1.0, mechanism="ops")
    with pytest.raises(NonPrivateModelError, match="mechanism='ops'"):
        pymc_dp.sample(10, model=_model(), epsilon=1.0)  # Laplace path, truncated prior
    with pytest.raises(ValueError, match="every draw is free"):
        pymc_dp.sample(10, model=_model(truncated=False), epsilon=1.0, release="chain")
    with pytest.raises(InvalidPrivateDataError):
        pymc_dp.sample(
            model=_model(data=np.where(OUTCOME == 1, 2, 0)), epsilon=1.0, mechanism="ops"
        )
    with pm.Model() as hyper:
        a = pm.Exponential("a", 1.0)
        rate = pm.Truncated("rate", pm.Beta.dist(a, 1.0), lower=0.1, upper=0.9)
        pm.Bernoulli("y", p=rate, observed=OUTCOME)
    with pytest.raises(NonPrivateModelError):
        pymc_dp.sample(model=hyper, epsilon=1.0, mechanism="ops")


def test_binomial_likelihood_uses_the_binomial_bound():
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Binomial("k", n=5, p=rate, observed=np.array([1, 3, 0, 5]))
    idata = pymc_dp.sample(model=model, epsilon=1.0, mechanism="ops", random_seed=3)
    (event,) = PrivacyLedger.from_datatree(idata).events
    assert event.sensitivity == pytest.approx(binomial_delta(5, 0.05))
    assert idata["posterior"]["rate"].dims == ("chain", "draw")
