"""Tempered models against conjugate closed forms; Minami's logistic-regression Gibbs posterior."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_dp import InvalidPrivateDataError
from pymc_dp.tempering import clip_feature_norms, logistic_regression_gibbs_posterior, temper
from pymc_dp.theory import minami_beta, minami_epsilon


def _beta_bernoulli(data):
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 3.0)
        pm.Bernoulli("y", p=p, observed=data)
    return model, p


def _logp_at(model, value):
    p = model["p"]
    transformed = model.rvs_to_transforms[p].forward(value, *p.owner.inputs).eval()
    return model.compile_logp(jacobian=False)({"p_logodds__": transformed})


@pytest.mark.parametrize(
    ("part", "params"),
    [
        # likelihood only: Beta(2 + s/T, 3 + (N - s)/T)
        ("likelihood", lambda s, n, t: (2 + s / t, 3 + (n - s) / t)),
        # joint (Foulds eq. 10): ((c - 1)/T + 1) for each Beta parameter c
        ("joint", lambda s, n, t: ((2 + s - 1) / t + 1, (3 + n - s - 1) / t + 1)),
    ],
)
def test_tempered_beta_bernoulli_has_the_closed_form_shape(part, params):
    data = np.array([1, 1, 0, 1, 0, 1, 1, 1])
    model, _ = _beta_bernoulli(data)
    tempered = temper(model, 4.0, part=part)
    a, b = params(data.sum(), data.size, 4.0)
    grid = np.array([0.2, 0.5, 0.7])
    got = np.array([_logp_at(tempered, v) for v in grid])
    expected = stats.beta(a, b).logpdf(grid)
    np.testing.assert_allclose(got - got[0], expected - expected[0], rtol=1e-9, atol=1e-12)


@pytest.mark.integration
def test_tempered_model_samples_the_tempered_posterior():
    data = np.array([1] * 30 + [0] * 10)
    model, _ = _beta_bernoulli(data)
    with temper(model, 5.0):
        idata = pm.sample(1000, tune=500, chains=2, progressbar=False, random_seed=1)
    a, b = 2 + 30 / 5, 3 + 10 / 5
    draws = idata.posterior["p"].values.ravel()
    assert draws.mean() == pytest.approx(a / (a + b), abs=0.02)
    assert draws.std() == pytest.approx(stats.beta(a, b).std(), rel=0.1)


def test_temperature_below_one_and_unknown_parts_are_refused():
    model, _ = _beta_bernoulli(np.array([1, 0]))
    with pytest.raises(ValueError, match=">= 1"):
        temper(model, 0.5)
    with pytest.raises(ValueError, match="part"):
        temper(model, 2.0, part="prior")


def test_clipping_bounds_every_norm_and_keeps_short_rows():
    z = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    clipped = clip_feature_norms(z, 1.0)
    np.testing.assert_allclose(clipped, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    with pytest.raises(
        InvalidPrivateDataError, match="features contain NaN or infinite values"
    ) as refused:
        clip_feature_norms(np.array([[np.nan, 7.25]]), 1.0)
    assert "7.25" not in str(refused.value)


def test_logistic_gibbs_posterior_uses_the_minami_beta_and_flags_convergence():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x @ [1.5, -1.0] + rng.logistic(size=200) > 0).astype(int)
    posterior = logistic_regression_gibbs_posterior(
        x, y, epsilon=1.0, delta=1e-5, prior_sigma=1.0, feature_norm_bound=2.0
    )
    lipschitz = np.sqrt(2.0**2 + 1)
    assert posterior.beta == pytest.approx(minami_beta(1.0, 1e-5, lipschitz, 1.0))
    assert minami_epsilon(posterior.beta, 1e-5, lipschitz, 1.0) == pytest.approx(1.0)
    event = posterior.event
    assert event.assumes_convergence and event.temperature == pytest.approx(1 / posterior.beta)
    assert (event.epsilon, event.delta, event.sensitivity) == (1.0, 1e-5, pytest.approx(lipschitz))
    with posterior.model:
        idata = pm.sample(300, tune=300, chains=1, progressbar=False, random_seed=2)
    for group in ("observed_data", "constant_data"):  # PyMC may add them empty
        assert group not in idata.children or not idata[group].data_vars
    assert float(idata.posterior["coefficients"].sel(feature=0).mean()) > 0  # signal survives


def test_logistic_gibbs_posterior_rejects_bad_labels():
    with pytest.raises(InvalidPrivateDataError, match=r"labels must be 0/1 or −1/\+1") as refused:
        logistic_regression_gibbs_posterior(
            np.ones((3, 1)),
            [0, 1, 2],
            epsilon=1.0,
            delta=1e-5,
            prior_sigma=1.0,
            feature_norm_bound=1.0,
        )
    assert "2" not in str(refused.value)  # never the offending value
    with pytest.raises(ValueError, match="δ"):
        logistic_regression_gibbs_posterior(
            np.ones((2, 1)), [0, 1], epsilon=1.0, delta=0.0, prior_sigma=1.0, feature_norm_bound=1.0
        )


def test_clipped_log_likelihood_bounds_every_record():
    from pymc_dp.tempering import clip_log_likelihood

    x = np.array([0.1, -0.5, 8.0])  # the outlier's log-likelihood is far below −B
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("x", mu, 1.0, observed=x)
    clipped = clip_log_likelihood(model, 3.0)
    assert not clipped.observed_RVs and [p.name for p in clipped.potentials] == ["x_clipped"]
    logp = clipped.compile_logp(jacobian=False)
    for value in (-1.0, 0.5, 4.0):
        expected = (
            stats.norm(0, 10).logpdf(value) + np.clip(stats.norm(value, 1).logpdf(x), -3, 3).sum()
        )
        assert logp({"mu": value}) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="B"):
        clip_log_likelihood(model, 0.0)
