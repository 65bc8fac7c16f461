"""Blocks, Δ and refusals of the tempered-model analysis; exact tempered conditional draws."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_dp import InvalidPrivateDataError, NonPrivateModelError
from pymc_dp.analysis.tempered import analyse_tempered_model
from pymc_dp.distributions import TruncatedBeta, TruncatedDirichlet, sample_truncated_dirichlet
from pymc_dp.families.bounds import (
    bernoulli_log_likelihood_bound,
    binomial_log_likelihood_bound,
    categorical_log_likelihood_bound,
    multinomial_log_likelihood_bound,
    normal_log_likelihood_bound,
    poisson_log_likelihood_bound,
    private_trials_log_likelihood_bound,
)
from pymc_dp.families.tempered import tempered_draw, tempered_parameters

RNG = np.random.default_rng(0)
GROUP = RNG.integers(0, 3, 120)
OUTCOME = RNG.binomial(1, 0.4, 120)
CATEGORY = RNG.integers(0, 4, 120)
COUNT = RNG.poisson(3.0, 120).clip(0, 5)
VALUE = RNG.normal(1.0, 1.0, 120).clip(-3, 3)
BOUNDS = {"count": (0, 5), "value": (-3.0, 3.0)}


def _mixed_model(**overrides):
    data = {"outcome": OUTCOME, "category": CATEGORY, "count": COUNT, "value": VALUE}
    data.update(overrides)
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        rate = TruncatedBeta("rate", 2.0, 2.0, 0.05, dims="group")
        pm.Bernoulli("outcome", p=rate[GROUP], observed=data["outcome"])
        shares = TruncatedDirichlet("shares", np.ones(4), 0.02)
        pm.Categorical("category", p=shares, observed=data["category"])
        lam = pm.Truncated("lam", pm.Gamma.dist(2.0, 0.5), lower=1.0, upper=10.0, dims="group")
        pm.Poisson("count", mu=lam[GROUP], observed=data["count"])
        mu = pm.TruncatedNormal("mu", 0.0, 5.0, lower=-2.0, upper=2.0)
        pm.Normal("value", mu=mu, sigma=1.5, observed=data["value"])
    return model


@pytest.mark.integration
def test_blocks_carry_the_closed_form_bounds_and_exact_statistics():
    analysis = analyse_tempered_model(_mixed_model(), data_bounds=BOUNDS)
    blocks = {b.prior: b for b in analysis.blocks}
    assert {name: b.kind for name, b in blocks.items()} == {
        "rate": "beta",
        "shares": "dirichlet",
        "lam": "gamma",
        "mu": "normal",
    }
    bounds = {lik.observed: lik.log_likelihood_bound for lik in analysis.likelihoods}
    assert bounds["outcome"] == pytest.approx(bernoulli_log_likelihood_bound(0.05))
    assert bounds["category"] == pytest.approx(categorical_log_likelihood_bound(0.02, 4))
    # group labels are private: the grouped Poisson bound, larger than the shared one
    assert bounds["count"] == pytest.approx(
        poisson_log_likelihood_bound(5, 1.0, 10.0, grouped=True)
    )
    assert bounds["count"] > poisson_log_likelihood_bound(5, 1.0, 10.0) + 2
    assert bounds["value"] == pytest.approx(normal_log_likelihood_bound(-3, 3, -2, 2, 1.5))
    assert analysis.record_log_likelihood_bound() == pytest.approx(sum(bounds.values()))
    successes = np.bincount(GROUP, weights=OUTCOME, minlength=3)
    np.testing.assert_array_equal(
        blocks["rate"].statistics, np.column_stack([successes, np.bincount(GROUP) - successes])
    )
    np.testing.assert_array_equal(blocks["shares"].statistics[0], np.bincount(CATEGORY, None, 4))
    np.testing.assert_array_equal(
        blocks["lam"].statistics[:, 0], np.bincount(GROUP, weights=COUNT, minlength=3)
    )
    assert blocks["mu"].statistics[0] == pytest.approx([VALUE.sum() / 1.5**2, 120 / 1.5**2])
    assert blocks["shares"].mechanisms_per_update == 3 and blocks["rate"].mechanisms_per_update == 1
    assert blocks["shares"].upper == pytest.approx(1 - 3 * 0.02)
    assert analysis.exact is False  # the Dirichlet block is updated by an MCMC kernel
    assert analysis.sweep_weight() == pytest.approx(
        2 * (bounds["outcome"] + 3 * bounds["category"] + bounds["count"] + bounds["value"])
    )


@pytest.mark.integration
def test_disjoint_variables_compose_in_parallel():
    with pm.Model() as model:
        a = TruncatedBeta("a", 1.0, 1.0, 0.1)
        b = TruncatedBeta("b", 1.0, 1.0, 0.01)
        pm.Bernoulli("site_a", p=a, observed=OUTCOME[:50])
        pm.Bernoulli("site_b", p=b, observed=OUTCOME[50:])
    sequential = analyse_tempered_model(model)
    parallel = analyse_tempered_model(model, disjoint=[["site_a", "site_b"]])
    assert sequential.record_log_likelihood_bound() == pytest.approx(
        bernoulli_log_likelihood_bound(0.1) + bernoulli_log_likelihood_bound(0.01)
    )
    assert parallel.record_log_likelihood_bound() == pytest.approx(
        bernoulli_log_likelihood_bound(0.01)
    )
    assert parallel.sweep_weight() == pytest.approx(2 * bernoulli_log_likelihood_bound(0.01))


@pytest.mark.integration
def test_trials_bounds_public_and_private():
    with pm.Model() as model:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        pm.Binomial("public", n=6, p=p, observed=np.array([1, 4, 6, 2]))
        q = TruncatedBeta("q", 1.0, 1.0, 0.2)
        # 4 records (not 3 = K, which would make theta's (3,) concentration record-shaped)
        pm.Binomial("private", n=np.array([2, 5, 3, 1]), p=q, observed=np.array([1, 5, 0, 1]))
        theta = TruncatedDirichlet("theta", np.ones(3), 0.05)
        pm.Multinomial("votes", n=4, p=theta, observed=np.array([[1, 2, 1], [4, 0, 0]]))
    bounds = {
        lik.observed: lik.log_likelihood_bound
        for lik in analyse_tempered_model(model, max_trials={"private": 5}).likelihoods
    }
    assert bounds == pytest.approx(
        {
            "public": binomial_log_likelihood_bound(6, 0.1),
            "private": private_trials_log_likelihood_bound(5, 0.2),
            "votes": multinomial_log_likelihood_bound(4, 0.05, 3),
        }
    )
    with pytest.raises(NonPrivateModelError, match="max_trials"):
        analyse_tempered_model(model)


def _hyper_model():
    with pm.Model() as model:
        a = pm.Exponential("a", 1.0)
        p = pm.Truncated("p", pm.Beta.dist(a + 1, 2.0), lower=0.05, upper=0.95)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
    return model


def test_hyperpriors_are_other_variables_and_make_the_model_mcmc():
    analysis = analyse_tempered_model(_hyper_model())
    assert analysis.others == ("a",) and not analysis.exact
    assert not analysis.blocks[0].constant_prior


def _refusal_models():
    with pm.Model() as untruncated:
        pm.Bernoulli("y", p=pm.Beta("p", 1, 1), observed=OUTCOME)
    with pm.Model() as open_gamma:
        lam = pm.Truncated("lam", pm.Gamma.dist(2, 1), lower=0.5)
        pm.Poisson("count", mu=lam, observed=COUNT)
    with pm.Model() as random_sigma:
        mu = pm.TruncatedNormal("mu", 0, 1, lower=-1, upper=1)
        pm.Normal("value", mu=mu, sigma=pm.HalfNormal("s"), observed=VALUE)
    with pm.Model() as shared:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        w = pm.Uniform("w", 0.5, 1.0)
        pm.Bernoulli("y", p=p * w, observed=OUTCOME)
    with pm.Model() as feeds_other:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        pm.Normal("z", mu=p)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
    with pm.Model() as hyper_dirichlet:
        alpha = pm.Exponential("alpha", 1.0, shape=4)
        theta = TruncatedDirichlet("theta", alpha, 0.02)
        pm.Categorical("category", p=theta, observed=CATEGORY)
    with pm.Model() as wrong_prior:
        lam = pm.Truncated("lam", pm.Gamma.dist(2, 1), lower=0.5, upper=0.9)
        pm.Bernoulli("y", p=lam, observed=OUTCOME)
    return {
        "untruncated": (untruncated, {}, "untruncated beta, so Δ = ∞"),
        "open_gamma": (open_gamma, {"data_bounds": {"count": (0, 5)}}, "both ends"),
        "no_bounds": (_mixed_model(), {}, "data_bounds"),
        "random_sigma": (random_sigma, {"data_bounds": {"value": (-3, 3)}}, r"reads \['s'\]"),
        "shared": (shared, {}, r"unsupported likelihood: a Bernoulli whose parameter is computed"),
        "feeds_other": (feeds_other, {}, "also feeds"),
        "hyper_dirichlet": (hyper_dirichlet, {}, "constant alpha"),
        "wrong_prior": (wrong_prior, {}, "truncated beta prior, got gamma"),
    }


@pytest.mark.parametrize("name", list(_refusal_models()))
def test_refusals_name_the_missing_bound(name):
    model, options, message = _refusal_models()[name]
    with pytest.raises(NonPrivateModelError, match=message):
        analyse_tempered_model(model, **options)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"count": np.where(COUNT == 0, 6, COUNT)}, "outside the declared domain"),
        ({"value": np.where(VALUE > 2, 3.5, VALUE)}, "outside the declared domain"),
        ({"category": np.where(CATEGORY == 0, 4, CATEGORY)}, "outside the declared domain"),
        ({"outcome": np.where(OUTCOME == 1, 2, 0)}, "outside the declared domain"),
    ],
)
def test_out_of_domain_records_are_rejected(override, message):
    with pytest.raises(InvalidPrivateDataError, match=message):
        analyse_tempered_model(_mixed_model(**override), data_bounds=BOUNDS)


def test_nan_is_rejected_not_imputed():
    with pytest.warns(UserWarning):  # PyMC announces the imputation it would do
        model = _mixed_model(value=np.where(VALUE > 2, np.nan, VALUE))
    with pytest.raises(InvalidPrivateDataError, match="NaN"):
        analyse_tempered_model(model, data_bounds=BOUNDS)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"data_bounds": {**BOUNDS, "nope": (0, 1)}}, "unknown observed"),
        ({"data_bounds": BOUNDS, "disjoint": [["count", "nope"]]}, "unknown observed"),
        ({"data_bounds": BOUNDS, "disjoint": [["count"]]}, "two or more"),
        ({"data_bounds": BOUNDS, "disjoint": [["count", "value"], ["value", "outcome"]]}, "once"),
        ({"data_bounds": {**BOUNDS, "outcome": (0, 1)}}, "Poisson and Normal"),
        ({"data_bounds": {**BOUNDS, "count": (0.5, 5)}}, "whole counts"),
        ({"data_bounds": {**BOUNDS, "value": (3, -3)}}, "low < high"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        analyse_tempered_model(_mixed_model(), **options)


# --- tempered conditionals ---------------------------------------------------------------------


def test_tempered_parameters_divide_every_exponent_by_t():
    stats_beta = np.array([[7.0, 3.0]])
    assert tempered_parameters("beta", (2.0, 3.0), stats_beta, 1.0) == pytest.approx((9.0, 6.0))
    assert tempered_parameters("beta", (2.0, 3.0), stats_beta, 4.0) == pytest.approx(
        (1 + 8 / 4, 1 + 5 / 4)
    )
    # Gamma(α, scale): shape (α − 1 + Σy)/T + 1, rate (1/scale + n)/T
    gamma = tempered_parameters("gamma", (2.0, 0.5), np.array([[30.0, 10.0]]), 2.0)
    assert gamma == pytest.approx((1 + 31 / 2, 12 / 2))
    # Normal: precision P = 1/σ₀² + n/σ², mean (μ₀/σ₀² + Σx/σ²)/P, sd √(T/P)
    mean, sd = tempered_parameters("normal", (1.0, 2.0), np.array([[8.0, 4.0]]), 3.0)
    assert (mean, sd) == (pytest.approx((0.25 + 8) / 4.25), pytest.approx(math.sqrt(3 / 4.25)))
    (alpha,) = tempered_parameters("dirichlet", (np.ones(3),), np.array([[4.0, 0.0, 2.0]]), 2.0)
    np.testing.assert_allclose(alpha, [[3.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match=">= 1"):
        tempered_parameters("beta", (1.0, 1.0), stats_beta, 0.5)


def test_likelihood_tempering_keeps_the_prior_and_divides_the_statistics():
    stats_beta = np.array([[8.0, 4.0]])
    beta = tempered_parameters("beta", (2.0, 3.0), stats_beta, 4.0, part="likelihood")
    assert beta == pytest.approx((2 + 8 / 4, 3 + 4 / 4))
    gamma = tempered_parameters("gamma", (2.0, 0.5), np.array([[30.0, 10.0]]), 2.0, "likelihood")
    assert gamma == pytest.approx((2 + 15, 2 + 5))
    mean, sd = tempered_parameters("normal", (1.0, 2.0), np.array([[8.0, 4.0]]), 4.0, "likelihood")
    assert (mean, sd) == (pytest.approx((0.25 + 2) / 1.25), pytest.approx(math.sqrt(1 / 1.25)))
    # with a flat prior the two temperings coincide (Beta(1, 1): (α − 1)/T + 1 = α)
    flat = tempered_parameters("beta", (1.0, 1.0), stats_beta, 4.0, part="likelihood")
    np.testing.assert_allclose(flat, tempered_parameters("beta", (1.0, 1.0), stats_beta, 4.0))
    with pytest.raises(ValueError, match="part"):
        tempered_parameters("beta", (1.0, 1.0), stats_beta, 2.0, part="prior")


@pytest.mark.parametrize(
    ("kind", "prior", "statistics", "bounds", "reference"),
    [
        ("beta", (2.0, 1.0), [[12.0, 30.0]], (0.1, 0.9), lambda a, b: stats.beta(a, b)),
        ("gamma", (2.0, 1.0), [[40.0, 12.0]], (0.5, 6.0), lambda k, r: stats.gamma(k, 0, 1 / r)),
        ("normal", (0.0, 3.0), [[20.0, 9.0]], (-1.0, 1.5), lambda m, s: stats.norm(m, s)),
    ],
)
def test_exact_tempered_draws_match_their_target(kind, prior, statistics, bounds, reference):
    statistics = np.asarray(statistics)
    temperature = 5.0
    draws = tempered_draw(
        kind, prior, statistics, temperature, bounds, np.random.default_rng(3), size=(6000,)
    )[:, 0]
    target = reference(*(p[0] for p in tempered_parameters(kind, prior, statistics, temperature)))
    lo, hi = target.cdf(bounds[0]), target.cdf(bounds[1])
    assert bounds[0] <= draws.min() and draws.max() <= bounds[1]
    assert stats.kstest(draws, lambda x: (target.cdf(x) - lo) / (hi - lo)).pvalue > 1e-3


def test_dirichlet_pair_kernel_leaves_the_tempered_truncated_dirichlet_invariant():
    counts, a0, temperature = np.array([[30.0, 2.0, 9.0]]), 0.05, 3.0
    (alpha,) = tempered_parameters("dirichlet", (np.ones(3),), counts, temperature)
    exact = sample_truncated_dirichlet(alpha[0], a0, np.random.default_rng(5), size=(20_000,))
    rng = np.random.default_rng(6)
    chains = np.tile(np.full(3, 1 / 3), (2000, 1))
    for _ in range(30):
        chains = tempered_draw(
            "dirichlet",
            (np.ones((2000, 3)),),
            np.repeat(counts, 2000, 0),
            temperature,
            (a0, 1 - 2 * a0),
            rng,
            current=chains,
        )
    se = exact.std(0) / math.sqrt(2000)
    np.testing.assert_allclose(chains.mean(0), exact.mean(0), atol=5 * se.max())
    with pytest.raises(ValueError, match="current value"):
        tempered_draw("dirichlet", (np.ones(3),), counts, 2.0, (a0, 0.9), rng)


def test_each_family_module_owns_its_tempered_update():
    from pymc_dp.families import beta, dirichlet, gamma, normal

    statistics = np.array([[7.0, 3.0]])
    cases = [
        ("beta", beta.beta_tempered_parameters, (2.0, 3.0), statistics),
        ("gamma", gamma.gamma_tempered_parameters, (2.0, 0.5), statistics),
        ("normal", normal.normal_tempered_parameters, (1.0, 2.0), statistics),
        ("dirichlet", dirichlet.dirichlet_tempered_parameters, (np.ones(2),), statistics),
    ]
    for kind, update, prior, stats_ in cases:
        np.testing.assert_array_equal(
            tempered_parameters(kind, prior, stats_, 3.0), update(prior, stats_, 3.0)
        )


# --- disjoint groups must hold different records (review finding 1) ------------------------

TEN = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1])


def _two_sites(first, second, labels=(None, None)):
    with pm.Model() as model:
        a = TruncatedBeta("a", 1.0, 1.0, 0.1, shape=None if labels[0] is None else 2)
        b = TruncatedBeta("b", 1.0, 1.0, 0.1, shape=None if labels[1] is None else 2)
        pm.Bernoulli("y1", p=a if labels[0] is None else a[labels[0]], observed=first)
        pm.Bernoulli("y2", p=b if labels[1] is None else b[labels[1]], observed=second)
    return model


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(None, id="one array"),
        pytest.param(TEN.copy(), id="an equal copy"),
    ],
)
def test_disjoint_refuses_likelihoods_that_read_the_same_records(second):
    """Two likelihoods of one array declared disjoint would pay max(Δ) for a record in both:
    the temperature halves while the ledger still says ε (truncation [0.1, 0.9], ε = 1: OPS
    T = 2·2Δ/ε = 8.79 → 4.39; the review measured an exact loss of 1.375 on one neighbouring
    pair with N = 10). Accepted before the fix."""
    model = _two_sites(TEN, TEN if second is None else second)
    analyse_tempered_model(model)  # without the declaration the Δ_v add: accepted
    with pytest.raises(NonPrivateModelError, match=r"y1 and y2 read the same observed values"):
        analyse_tempered_model(model, disjoint=[["y1", "y2"]])


def test_disjoint_refuses_shared_group_labels_without_quoting_them():
    labels = np.array([0, 1] * 5)
    model = _two_sites(TEN, 1 - TEN, labels=(labels, labels.copy()))
    with pytest.raises(NonPrivateModelError, match="group labels") as refused:
        analyse_tempered_model(model, disjoint=[["y1", "y2"]])
    assert "[0, 1" not in str(refused.value) and "1 0" not in str(refused.value)


def test_disjoint_accepts_different_records():
    model = _two_sites(TEN, 1 - TEN)
    parallel = analyse_tempered_model(model, disjoint=[["y1", "y2"]])
    assert parallel.record_log_likelihood_bound() == pytest.approx(
        bernoulli_log_likelihood_bound(0.1)
    )
