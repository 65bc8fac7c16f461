"""accounting="tight" on the posterior-sampling routes: same (ε, δ), lower temperature."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import BudgetExceededError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.families.bounds import bernoulli_log_likelihood_bound
from pymc_dp.hmm import simulate_records
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.routes import RunRequest, route_for

DELTA = 1e-6
OUTCOME = np.random.default_rng(0).integers(0, 2, 500)


def _bernoulli_model():
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=OUTCOME)
    return model


def _run(model, ledger, *, accounting, delta, mechanism="gibbs-exponential", hmm=False, **kw):
    recognised = (
        SimpleNamespace(kind="hmm", blocks=model.pymc_dp_hmm)
        if hmm
        else recognise(model, mechanism)
    )
    request = RunRequest(
        model=model,
        draws=kw.pop("draws", 30),
        mechanism=mechanism,
        epsilon=kw.pop("epsilon", 1.0),
        delta=delta,
        neighbouring="replace-one",
        release=kw.pop("release", None),
        ledger=ledger,
        noise_rng=np.random.default_rng(3),
        accounting=accounting,
        sample_kwargs={"tune": 20, "chains": 1, "progressbar": False, "random_seed": 1, **kw},
    )
    return route_for(recognised.kind, mechanism)(request, recognised)


def test_gibbs_route_spends_the_same_guarantee_at_a_lower_temperature():
    basic_ledger, tight_ledger = PrivacyLedger(), PrivacyLedger()
    _run(_bernoulli_model(), basic_ledger, accounting="basic", delta=0.0)
    idata = _run(_bernoulli_model(), tight_ledger, accounting="tight", delta=DELTA)
    (basic,) = basic_ledger.events
    (tight,) = tight_ledger.events
    bound = bernoulli_log_likelihood_bound(0.05)
    assert basic.compositions == tight.compositions == 50  # one update per sweep
    assert basic.temperature == pytest.approx(50 * 2 * bound / 1.0)
    assert basic.epsilon == pytest.approx(1.0)
    assert tight.temperature < basic.temperature / 2
    composed = tight_ledger.epsilon_at(DELTA)
    assert composed.epsilon <= 1.0 * (1 + 1e-12) and composed.method != "basic"
    assert tight_ledger.epsilon > 1.0  # the sum is no longer the guarantee
    assert f"δ = {DELTA:g}" in tight.statistic and "basic composition: T" in tight.statistic
    assert idata["posterior"].sizes["draw"] == 30


def test_budgets_accept_a_tight_run_only_when_checked_tightly():
    for ledger in (PrivacyLedger(budget=(1.0, DELTA)), PrivacyLedger(budget=1.0)):
        budget = rf"over the budget \(epsilon=1, delta={ledger.budget[1]:g}\)"
        with pytest.raises(BudgetExceededError, match=r"release of \(epsilon=2\.\d+.*" + budget):
            _run(_bernoulli_model(), ledger, accounting="tight", delta=DELTA)
        assert len(ledger) == 0  # nothing charged, nothing sampled
    ledger = PrivacyLedger(budget=(1.0, DELTA), tight_budget=True)
    _run(_bernoulli_model(), ledger, accounting="tight", delta=DELTA)
    assert len(ledger) == 1 and ledger.remaining()[0] >= -1e-12


def test_exact_ops_chain_release_is_calibrated_tightly_too():
    ledger = PrivacyLedger()
    _run(
        _bernoulli_model(),
        ledger,
        accounting="tight",
        delta=DELTA,
        mechanism="ops",
        release="chain",
        draws=200,
        tune=0,
    )
    (event,) = ledger.events
    assert event.compositions == 200 and event.mechanism == "ops"
    assert event.temperature < 200 * 2 * bernoulli_log_likelihood_bound(0.05) / 3
    assert ledger.epsilon_at(DELTA).epsilon <= 1.0 * (1 + 1e-12)


def test_tight_accounting_refusals():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="give delta in"):
        _run(_bernoulli_model(), ledger, accounting="tight", delta=0.0)
    with pytest.raises(ValueError, match="accounting must be one of"):
        _run(_bernoulli_model(), ledger, accounting="rdp", delta=DELTA)
    with pytest.raises(ValueError, match="accounting='tight'"):  # pure ε-DP without it
        _run(_bernoulli_model(), ledger, accounting="basic", delta=DELTA)
    assert len(ledger) == 0


@pytest.mark.integration
def test_hmm_gibbs_route_tight():
    simulated = simulate_records(3, 8, 2, [2, 3], 2000, np.random.default_rng(4))
    model = naive_bayes_hmm(simulated.counts, 2, truncation=10)
    basic_ledger, tight_ledger = PrivacyLedger(), PrivacyLedger()
    _run(model, basic_ledger, accounting="basic", delta=0.0, hmm=True, epsilon=2.0, draws=10)
    _run(model, tight_ledger, accounting="tight", delta=DELTA, hmm=True, epsilon=2.0, draws=10)
    assert [e.compositions for e in tight_ledger.events] == [30, 30, 60]
    assert basic_ledger.epsilon == pytest.approx(2.0)
    assert tight_ledger.events[0].temperature < basic_ledger.events[0].temperature
    assert tight_ledger.epsilon_at(DELTA).epsilon <= 2.0 * (1 + 1e-12)
    assert tight_ledger.epsilon_at(DELTA).method == "bounded-range"


def test_public_sample_takes_tight_accounting_and_makes_a_tight_budget_ledger():
    with _bernoulli_model():
        idata = pymc_dp.sample(
            20,
            epsilon=1.0,
            delta=DELTA,
            budget=(1.0, DELTA),
            mechanism="gibbs-exponential",
            accounting="tight",
            tune=10,
            chains=1,
            progressbar=False,
            random_seed=2,
        )
    ledger = PrivacyLedger.from_datatree(idata)
    (event,) = ledger.events
    assert event.compositions == 30 and "basic composition: T" in event.statistic
    assert ledger.epsilon_at(DELTA).epsilon <= 1.0 * (1 + 1e-12)
    assert ledger.epsilon > 1.0  # (ε, δ)-DP: the basic sum is not the guarantee


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"accounting": "rdp", "mechanism": "ops"}, "accounting must be one of"),
        ({"accounting": "tight", "mechanism": "laplace"}, "calibrates the temperature"),
        ({"accounting": "tight", "mechanism": "metropolis"}, "calibrates the temperature"),
    ],
)
def test_public_sample_refuses_accounting_it_cannot_apply(options, message):
    ledger = PrivacyLedger()
    with _bernoulli_model(), pytest.raises(ValueError, match=message):
        pymc_dp.sample(10, epsilon=1.0, delta=DELTA, ledger=ledger, **options)
    assert len(ledger) == 0
