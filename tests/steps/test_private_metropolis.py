"""Private Metropolis (Foulds Thm C.1) through pymc_dp.sample(mechanism="metropolis")."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_dp
from pymc_dp import BudgetExceededError, PrivacyLedger
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.steps.private_metropolis import PrivateMetropolis

DATA = np.array([1] * 14 + [0] * 26)


def _model():
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=DATA)
    return model


def _sample(release, epsilon, draws=200, tune=50, **kwargs):
    if release == "chain":  # an explicit opt-in: its (ε, δ) rests on an unverified assumption
        kwargs.setdefault("assume_rejection_bound", True)
    return pymc_dp.sample(
        draws,
        tune=tune,
        model=_model(),
        epsilon=epsilon,
        mechanism="metropolis",
        release=release,
        proposal_scale=0.4,
        progressbar=False,
        random_seed=1,
        noise_rng=np.random.default_rng(1),
        **kwargs,
    )


def test_chain_release_composes_every_step_including_tuning():
    idata = _sample("chain", 5.0, delta=1e-6)
    (event,) = PrivacyLedger.from_datatree(idata).events
    n_steps = 250
    assert event.temperature == pytest.approx(2 * math.log(19) * n_steps / 5.0)
    assert (event.epsilon, event.delta) == (pytest.approx(5.0), 1e-6)
    assert not event.assumes_convergence and idata["posterior"].sizes["draw"] == 200


def test_chain_targets_the_tempered_truncated_posterior():
    draws, tune, epsilon = 6000, 500, 2 * math.log(19) * 6500 / 1.5  # T = 1.5
    idata = _sample("chain", epsilon, draws=draws, tune=tune, delta=0.5)
    temperature = PrivacyLedger.from_datatree(idata).events[0].temperature
    assert temperature == pytest.approx(1.5)
    a, b = (14 + 1 - 1) / 1.5 + 1, (26 + 1 - 1) / 1.5 + 1
    weight = integrate.quad(lambda x: stats.beta(a, b).pdf(x), 0.05, 0.95)[0]
    mean = integrate.quad(lambda x: x * stats.beta(a, b).pdf(x), 0.05, 0.95)[0] / weight
    assert float(idata["posterior"]["rate"].mean()) == pytest.approx(mean, abs=0.02)


def test_last_release_keeps_one_draw_and_assumes_convergence():
    idata = _sample("last", 1.0)
    (event,) = PrivacyLedger.from_datatree(idata).events
    assert idata["posterior"].sizes["draw"] == 1 and event.assumes_convergence
    assert event.delta == 0.0 and event.worst_case_epsilon is None  # rejections need a δ
    with pytest.raises(ValueError, match="spends no δ"):
        _sample("last", 1.0, delta=1e-6)


def test_refusals_and_budget():
    with pytest.raises(ValueError, match="proposal_scale"):
        pymc_dp.sample(10, model=_model(), epsilon=1.0, mechanism="metropolis")
    with pytest.raises(ValueError, match="δ"):
        _sample("chain", 1.0)  # δ = 0 cannot cover rejections
    ledger = PrivacyLedger(budget=(1.0, 1e-3))
    with pytest.raises(BudgetExceededError, match=r"release of"):
        _sample("chain", 2.0, delta=1e-6, ledger=ledger)
    assert len(ledger) == 0
    with pytest.raises(ValueError, match="proposal_scale"):
        with _model():
            PrivateMetropolis(proposal_scale=0.0)
