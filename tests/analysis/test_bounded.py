"""Recognition of Poisson, Normal and linear-regression likelihoods with declared bounds, and
every refusal: before anything is released, the ledger untouched, no noise drawn."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.families import BoundedLink

RNG = np.random.default_rng(0)
N = 30
X = RNG.uniform(0, 1, (N, 2))
Y = np.clip(0.5 + X @ [1.0, -1.0] + RNG.normal(0, 0.2, N), -2, 3)
COUNTS = RNG.poisson(2.0, N)
GROUPS = RNG.integers(0, 3, N)
BOUNDS = {"y": (-2, 3), "X": (0, 1)}


def regression(mean=lambda x, b, a: x @ b + a, data=True, y=Y, x=X):
    with pm.Model(coords={"coef": ["a", "b"]}) as model:
        covariates = pm.Data("X", x) if data else x
        beta = pm.Normal("beta", dims="coef")
        alpha = pm.Normal("alpha")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", mu=mean(covariates, beta, alpha), sigma=sigma, observed=y)
    return model


def links(model, **kwargs):
    return recognise(model, "laplace", **kwargs).blocks


# --- recognised shapes -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "mean, roles",
    [
        (lambda x, b, a: x @ b + a, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: a + x @ b, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: pm.math.dot(x, b) + a, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: x @ b, {"beta", "sigma"}),
    ],
    ids=["X@b+a", "a+X@b", "dot+a", "X@b"],
)
def test_regression_shapes_are_recognised(mean, roles):
    [link] = links(regression(mean), data_bounds=BOUNDS).values()
    assert isinstance(link, BoundedLink)
    structure = link.structure
    assert structure.family.name == "linear-regression"
    assert set(structure.parameters) == roles
    assert structure.covariates == "X" and structure.n_covariates == 2
    np.testing.assert_array_equal(link.covariates, X)


def test_a_constant_covariate_matrix_is_keyed_by_the_observed_name():
    model = regression(data=False)
    [link] = links(model, data_bounds={"y": (-2, 3), "y_covariates": ([0, 0], [1, 1])}).values()
    assert link.structure.covariates == "y_covariates"
    np.testing.assert_array_equal(link.structure.covariate_bounds[1], [1.0, 1.0])


def test_normal_and_poisson_shapes_are_recognised():
    with pm.Model(coords={"g": list("abc")}) as model:
        mu = pm.Normal("mu")
        log_sigma = pm.Normal("log_sigma")
        pm.Normal("x", mu, pm.math.exp(log_sigma), observed=Y)
        lam = pm.HalfNormal("lam", 3, dims="g")
        pm.Poisson("c", lam[GROUPS], observed=COUNTS)
        rate = pm.Gamma("rate", 2, 1)
        pm.Poisson("d", rate, observed=COUNTS)
    found = links(model, data_bounds={"x": (-2, 3), "c": (0, 20), "d": (0, 20)})
    assert found["x"].structure.family.name == "normal"
    assert found["c"].structure.n_groups == 3 and found["c"].structure.grouped
    assert found["c"].structure.group_variable == "lam"
    assert not found["d"].structure.grouped and found["d"].structure.n_groups == 1


def test_conjugate_and_bounded_likelihoods_mix_in_one_model():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("b", p, observed=(Y > 0).astype(int))
        mu = pm.Normal("mu")
        pm.Normal("x", mu, 1.0, observed=Y)
    found = links(model, data_bounds={"x": (-2, 3)})
    assert type(found["b"]).__name__ == "ConjugateLink"
    assert isinstance(found["x"], BoundedLink)


# --- refusals: nothing released, nothing charged -------------------------------------------
def _refused(model, error, match, **kwargs):
    ledger = PrivacyLedger()
    noise = np.random.default_rng(0)
    state = noise.bit_generator.state
    with pytest.raises(error, match=match) as raised:
        pymc_dp.sample(
            5,
            epsilon=1.0,
            model=model,
            ledger=ledger,
            noise_backend="numpy",
            noise_rng=noise,
            tune=5,
            chains=1,
            progressbar=False,
            **kwargs,
        )
    assert len(ledger) == 0 and noise.bit_generator.state == state
    return str(raised.value)


def test_a_missing_bound_names_the_variable_and_the_bound():
    _refused(regression(), NonPrivateModelError, r"y: .*data_bounds\['y'\]", data_bounds=None)
    _refused(
        regression(), NonPrivateModelError, r"y: .*data_bounds\['X'\]", data_bounds={"y": (-2, 3)}
    )
    with pm.Model() as poisson:
        pm.Poisson("c", pm.Gamma("lam", 2, 1), observed=COUNTS)
    _refused(poisson, NonPrivateModelError, r"c: .*data_bounds\['c'\] .* missing")


OTHER_FORM = "per-record covariates in another form than X @ beta"


@pytest.mark.parametrize(
    "mean, match",
    [
        (lambda x, b, a: pm.math.exp(x @ b + a), OTHER_FORM),
        (lambda x, b, a: x @ b + a * x[:, 0], OTHER_FORM),
        (lambda x, b, a: (x * 2.0) @ b + a, "covariates are computed in the model graph"),
        (lambda x, b, a: x @ b + a + 1.0, OTHER_FORM),
    ],
    ids=["nonlinear", "covariate-in-intercept", "transformed-X", "three-terms"],
)
def test_unknown_regression_structures_are_refused(mean, match):
    _refused(regression(mean), NonPrivateModelError, match, data_bounds=BOUNDS)


def test_covariates_read_by_a_deterministic_are_refused():
    model = regression()
    with model:
        pm.Deterministic("fitted", model["X"] @ model["beta"])
    message = _refused(
        model, NonPrivateModelError, "'fitted' reads pm.Data 'X'", data_bounds=BOUNDS
    )
    assert "Nothing was released" in message


def test_a_sigma_computed_from_the_records_is_refused():
    with pm.Model() as from_container:
        y = pm.Data("y_data", Y)
        mu = pm.Normal("mu")
        pm.Normal("y", mu, pt.std(y), observed=y)
    _refused(from_container, NonPrivateModelError, "sigma reads", data_bounds={"y": (-2, 3)})
    with pm.Model() as from_constant:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, pt.as_tensor(Y).std(), observed=Y)
    _refused(from_constant, NonPrivateModelError, "'y' reads", data_bounds={"y": (-2, 3)})


@pytest.mark.parametrize("sigma", [0.0, -1.0, np.inf])
def test_a_constant_sigma_must_be_positive_and_finite(sigma):
    with pm.Model() as model:
        pm.Normal("y", pm.Normal("mu"), sigma, observed=Y)
    _refused(model, NonPrivateModelError, "not finite and > 0", data_bounds={"y": (-2, 3)})


def test_per_record_parameters_are_refused():
    with pm.Model() as per_record_sigma:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, pm.HalfNormal("s", shape=N), observed=Y)
    _refused(per_record_sigma, NonPrivateModelError, "varies by record", data_bounds={"y": (-2, 3)})
    with pm.Model() as per_record_rate:
        pm.Poisson("c", pm.HalfNormal("lam", shape=N), observed=COUNTS)
    _refused(per_record_rate, NonPrivateModelError, "varies by record", data_bounds={"c": (0, 9)})
    with pm.Model() as unbounded_covariates:  # a Poisson regression needs bounds on X
        b = pm.Normal("b", shape=2)
        pm.Poisson("c", pm.math.exp(pt.as_tensor(X) @ b), observed=COUNTS)
    _refused(
        unbounded_covariates,
        NonPrivateModelError,
        r"data_bounds\['c_covariates'\] = \(low, high\) is missing",
        data_bounds={"c": (0, 9)},
    )


def test_a_conjugate_prior_feeding_a_bounded_likelihood_is_refused():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("b", p, observed=(Y > 0).astype(int))
        pm.Normal("x", p, 1.0, observed=Y)
    _refused(model, NonPrivateModelError, "also feeds", data_bounds={"x": (-2, 3)})


def test_bad_records_are_refused_before_any_release():
    outside = Y.copy()
    outside[:3] = 7.5
    message = _refused(
        regression(y=outside), InvalidPrivateDataError, "y: 3 values outside", data_bounds=BOUNDS
    )
    assert "7.5" not in message and "clamp_to_bounds" in message
    infinite = Y.copy()
    infinite[0] = np.inf
    _refused(
        regression(y=infinite),
        InvalidPrivateDataError,
        "NaN or infinite",
        data_bounds=BOUNDS,
        clamp_to_bounds=True,
    )
    with pm.Model() as fractional:
        pm.Poisson("c", pm.Gamma("lam", 2, 1), observed=pm.Data("c_data", COUNTS + 0.5))
    _refused(fractional, InvalidPrivateDataError, "whole numbers", data_bounds={"c": (0, 20)})
    with pm.Model() as bad_labels:
        lam = pm.Gamma("lam", 2, 1, shape=2)
        pm.Poisson("c", lam[pm.Data("g", GROUPS)], observed=COUNTS)  # label 2 of 2 groups
    _refused(bad_labels, InvalidPrivateDataError, "group labels", data_bounds={"c": (0, 20)})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"data_bounds": {**BOUNDS, "z": (0, 1)}}, "no Poisson, Normal or regression"),
        ({"data_bounds": {**BOUNDS, "y": (3, -2)}}, "low < high"),
        ({"data_bounds": {**BOUNDS, "X": ([0, 0, 0], [1, 1, 1])}}, "one per column"),
        ({"data_bounds": BOUNDS, "clamp_to_bounds": ["nope"]}, "no declared data_bounds"),
        ({"data_bounds": BOUNDS, "clamp_to_bounds": "y"}, "list of data_bounds keys"),
        ({"data_bounds": BOUNDS, "max_trials": {"y": 3}}, "Binomial and Multinomial"),
    ],
)
def test_invalid_declarations_are_refused(kwargs, match):
    _refused(regression(), ValueError, match, **kwargs)


def test_clamping_is_an_option_of_the_laplace_statistics_only():
    with pm.Model() as model:
        mu = pm.TruncatedNormal("mu", 0, 1, lower=-2, upper=3)
        pm.Normal("x", mu, 1.0, observed=Y)
    _refused(
        model,
        ValueError,
        "clamp_to_bounds is an option of the Laplace",
        mechanism="ops",
        data_bounds={"x": (-2, 3)},
        clamp_to_bounds=True,
    )
