"""Empirical privacy audits of the posterior-sampling mechanisms, with untempered controls.

Each audit runs a mechanism many times on a worst-case pair of one-record datasets (the
record at the two ends of its declared domain), at the temperature ``pymc_dp`` sets for
ε = 1, and bounds ε from below (Clopper–Pearson, :mod:`pymc_dp.audit`). A sound mechanism
stays at or below ε; the same mechanism at T = 1 (no tempering) is caught. The events are
fixed in advance from the likelihood ratio of the pair.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import special

from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.families.bounds import (
    bernoulli_log_likelihood_bound,
    categorical_log_likelihood_bound,
    normal_log_likelihood_bound,
    poisson_log_likelihood_bound,
)
from pymc_dp.families.tempered import tempered_draw
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.private_metropolis import PrivateMetropolis
from pymc_dp.tempering import temper
from pymc_dp.theory import ops_temperature

EPSILON = 1.0
N_RUNS = 20_000


def _exact_audit(kind, prior, stats_0, stats_1, bounds, temperature, event):
    rng = np.random.default_rng(31)

    def draws(statistics):
        statistics = np.array([statistics], dtype=float)
        return tempered_draw(kind, prior, statistics, temperature, bounds, rng, size=(N_RUNS,))

    return epsilon_lower_bound(draws(stats_0)[:, 0], draws(stats_1)[:, 0], event, vectorized=True)


POISSON = ("gamma", (2.0, 1.0), [0.0, 1.0], [5.0, 1.0], (1.0, 10.0))  # y ∈ 0..5, λ ∈ [1, 10]
NORMAL = ("normal", (0.0, 2.0), [-2.0, 1.0], [2.0, 1.0], (-1.0, 1.0))  # x ∈ [−2, 2], σ = 1


@pytest.mark.parametrize(
    ("mechanism", "bound", "event"),
    [
        (POISSON, poisson_log_likelihood_bound(5, 1.0, 10.0), lambda lam: lam < 1.2),
        (NORMAL, normal_log_likelihood_bound(-2, 2, -1, 1, 1.0), lambda mu: mu > 0.7),
    ],
    ids=["poisson", "normal"],
)
def test_exact_one_posterior_sample_audits_and_untempered_control(mechanism, bound, event):
    sound = _exact_audit(*mechanism, ops_temperature(bound, EPSILON), event)
    untempered = _exact_audit(*mechanism, 1.0, event)
    assert sound <= EPSILON
    assert untempered > 2.5 * EPSILON


def _dirichlet_sweep_audit(temperature, event):
    """One Fang et al. sweep (two pair updates) of a 3-category truncated Dirichlet block."""
    rng = np.random.default_rng(32)
    start = np.full((N_RUNS, 3), 1 / 3)

    def draws(counts):
        statistics = np.repeat(np.array([counts], dtype=float), N_RUNS, axis=0)
        prior = (np.ones((N_RUNS, 3)),)
        return tempered_draw(
            "dirichlet", prior, statistics, temperature, (0.05, 0.9), rng, current=start
        )

    return epsilon_lower_bound(draws([1, 0, 0]), draws([0, 0, 1]), event, vectorized=True)


def test_dirichlet_sweep_audit_and_untempered_control():
    # a sweep is K − 1 = 2 exponential mechanisms: ε = 2·2Δ/T
    temperature = 2 * 2 * categorical_log_likelihood_bound(0.05, 3) / EPSILON
    event = lambda theta: theta[:, 0] > 0.6  # noqa: E731
    assert _dirichlet_sweep_audit(temperature, event) <= EPSILON
    assert _dirichlet_sweep_audit(1.0, event) > 1.5 * EPSILON


def _gibbs_chain_audit(temperature):
    """Every draw of a two-sweep exponential-mechanism Gibbs chain of a Beta block."""
    rng = np.random.default_rng(33)

    def chains(statistics):
        statistics = np.array([statistics], dtype=float)
        draws = tempered_draw(
            "beta", (1.0, 1.0), statistics, temperature, (0.05, 0.95), rng, size=(N_RUNS, 2)
        )
        return draws[..., 0]

    return epsilon_lower_bound(
        chains([1, 0]), chains([0, 1]), lambda x: np.all(x > 0.8, axis=1), vectorized=True
    )


def test_gibbs_chain_audit_and_untempered_control():
    # n = 2 sweeps compose: T = n·2Δ/ε (pymc_dp.tempered.sampling)
    assert _gibbs_chain_audit(2 * 2 * bernoulli_log_likelihood_bound(0.05) / EPSILON) <= EPSILON
    assert _gibbs_chain_audit(1.0) > 1.5 * EPSILON


def _metropolis_model(outcome):
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=np.array([outcome]))
    return model


def _metropolis_audit(temperature, scale=3.0):
    """One Metropolis step from rate = 1/2 (Foulds Theorem C.1).

    The proof (App. D) bounds the density ratio of *accepted* moves pointwise by e^ε; δ covers
    only the rejection atom at the start. The event (rate > 0.85) excludes that atom, so the
    audit needs no δ.
    """
    rng = np.random.default_rng(34)

    def steps(outcome):
        # one step's mechanism, audited directly (route_context: the routes' internal hook)
        with temper(_metropolis_model(outcome), temperature, part="joint"), route_context():
            step = PrivateMetropolis(proposal_scale=scale, rng=rng)
        start = {"rate_interval__": np.array(0.0)}
        values = [step.step(start)[0]["rate_interval__"] for _ in range(N_RUNS)]
        return 0.05 + 0.9 * special.expit(np.array(values, dtype=float))

    return epsilon_lower_bound(steps(1), steps(0), lambda r: r > 0.85, vectorized=True)


@pytest.mark.integration
def test_metropolis_step_audit_and_untempered_control():
    temperature = ops_temperature(bernoulli_log_likelihood_bound(0.05), EPSILON)
    assert _metropolis_audit(temperature) <= EPSILON
    assert _metropolis_audit(1.0) > 1.4 * EPSILON
