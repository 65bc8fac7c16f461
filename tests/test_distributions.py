"""Truncated Beta and truncated Dirichlet priors: support, logp and exact draws."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_dp.distributions import TruncatedBeta, TruncatedDirichlet, sample_truncated_dirichlet
from pymc_dp.truncated import truncated_dirichlet_gibbs


def _assert_truncated_beta_2_3(draws):
    """KS test of draws against Beta(2, 3) truncated to [0.1, 0.9]."""
    base = stats.beta(2, 3)
    mass = base.cdf(0.9) - base.cdf(0.1)
    assert stats.kstest(draws, lambda x: (base.cdf(x) - base.cdf(0.1)) / mass).pvalue > 1e-3


def test_truncated_beta_draws_and_logp():
    with pm.Model() as model:
        p = TruncatedBeta("p", 2.0, 3.0, 0.1)
    draws = pm.draw(p, draws=4000, random_seed=1)
    assert draws.min() >= 0.1 and draws.max() <= 0.9
    _assert_truncated_beta_2_3(draws)
    logp = model.compile_logp(jacobian=False)
    value = {"p_interval__": model.rvs_to_transforms[p].forward(0.4, *p.owner.inputs).eval()}
    mass = stats.beta(2, 3).cdf(0.9) - stats.beta(2, 3).cdf(0.1)
    assert logp(value) == pytest.approx(stats.beta(2, 3).logpdf(0.4) - np.log(mass))
    with pytest.raises(ValueError, match="1/2"):
        with pm.Model():
            TruncatedBeta("q", 1.0, 1.0, 0.5)


@pytest.mark.integration
def test_two_category_truncated_dirichlet_is_the_truncated_beta():
    with pm.Model():
        theta = TruncatedDirichlet("theta", np.array([2.0, 3.0]), 0.1)
    draws = pm.draw(theta, draws=4000, random_seed=2)[:, 0]
    _assert_truncated_beta_2_3(draws)


def test_truncated_dirichlet_draws_agree_with_the_gibbs_kernel():
    alpha, a0 = np.array([0.7, 2.0, 1.3]), 0.08
    exact = sample_truncated_dirichlet(alpha, a0, np.random.default_rng(3), size=(20_000,))
    assert exact.shape == (20_000, 3) and exact.min() >= a0
    rng = np.random.default_rng(4)
    chains = np.tile(np.full(3, 1 / 3), (2000, 1))
    for _ in range(30):
        chains = truncated_dirichlet_gibbs(chains, alpha, a0, rng)
    se = exact.std(0) / np.sqrt(2000)
    np.testing.assert_allclose(chains.mean(0), exact.mean(0), atol=5 * se.max())


def test_truncated_dirichlet_logp_is_minus_infinity_outside():
    with pm.Model() as model:
        theta = TruncatedDirichlet("theta", np.ones(3), 0.1)
    logp = model.compile_logp(jacobian=False)
    transform = model.rvs_to_transforms[theta]

    def at(value):
        return logp(
            {"theta_simplex__": transform.forward(np.array(value), *theta.owner.inputs).eval()}
        )

    assert at([0.2, 0.3, 0.5]) == pytest.approx(stats.dirichlet(np.ones(3)).logpdf([0.2, 0.3, 0.5]))
    assert at([0.05, 0.45, 0.5]) == -np.inf
    with pytest.raises(ValueError, match="1/3"):
        with pm.Model():
            TruncatedDirichlet("bad", np.ones(3), 0.4)


def test_hopeless_truncation_is_reported():
    with pytest.raises(RuntimeError, match="acceptance"):
        sample_truncated_dirichlet(np.full(50, 0.01), 0.0199, np.random.default_rng(0), size=(2,))
