"""Refusals that give the true reason: an unsupported likelihood is called unsupported and
the supported ones are listed from the recognisers' own tables; a parameter wrapped in a
``pm.Deterministic`` is named, with the fix. Fast: every refusal comes before any release."""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis.tempered import TEMPERED_PATTERNS
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.families import BOUNDED_FAMILIES, FAMILIES, LAPLACE_PATTERNS

RNG = np.random.default_rng(3)
N = 40
X = RNG.uniform(0, 1, (N, 2))
OUTCOME = RNG.integers(0, 2, N)
Y = np.clip(X @ [1.0, -1.0] + RNG.normal(0, 0.2, N), -2, 2)


def _refusal(build, **options) -> str:
    """The message of the refusal of ``build()``'s model; nothing charged."""
    ledger = PrivacyLedger()
    with build():
        with pytest.raises(NonPrivateModelError) as refused:
            pymc_dp.sample(10, epsilon=1.0, ledger=ledger, chains=1, tune=5, **options)
    assert len(ledger) == 0
    return str(refused.value)


def _logistic(data: bool):
    def build():
        model = pm.Model()
        with model:
            covariates = pm.Data("X", X) if data else X
            beta = pm.Normal("beta", 0, 1, shape=2)
            alpha = pm.Normal("alpha")
            pm.Bernoulli("y", logit_p=covariates @ beta + alpha, observed=OUTCOME)
        return model

    return build


def _no_values(message: str) -> None:
    """No record or covariate value in a message (4 significant digits of each)."""
    for value in (*X.ravel()[:10], *Y[:10]):
        assert f"{value:.4f}"[:6] not in message


@pytest.mark.parametrize(
    ("data", "options", "key"),
    [(False, {}, "y_covariates"), (True, {"public": ["X"]}, "X"), (True, {}, "X")],
    ids=["constant-X", "public-X", "private-X"],
)
def test_a_logistic_regression_without_covariate_bounds_is_told_the_bound_to_declare(
    data, options, key
):
    message = _refusal(_logistic(data), **options)
    assert message.startswith("y: the Laplace statistics need a declared range of its covariates")
    assert f"data_bounds[{key!r}] = (low, high) is missing" in message
    assert "public=" not in message  # not the wrong reason
    _no_values(message)


def test_a_likelihood_no_family_takes_is_refused_with_the_supported_list():
    def build():
        model = pm.Model()
        with model:
            theta = pm.Normal("theta", shape=len(Y))  # one latent mean per record
            pm.Normal("y", mu=theta, sigma=1.0, observed=Y)
        return model

    message = _refusal(build, data_bounds={"y": (-2, 2)})
    assert message.startswith("y: unsupported likelihood: a Normal whose mean ")
    listed = message.split(" take only: ")[1]
    assert listed.startswith("; ".join(LAPLACE_PATTERNS) + ". ")
    for family in (*FAMILIES.values(), *BOUNDED_FAMILIES.values()):
        assert family.pattern in listed


def test_every_family_declares_one_pattern_and_the_table_lists_each_once():
    patterns = [f.pattern for f in (*FAMILIES.values(), *BOUNDED_FAMILIES.values())]
    assert list(LAPLACE_PATTERNS) == patterns
    assert len(set(patterns)) == len(patterns) == 8


def test_a_logistic_regression_is_refused_as_unsupported_by_the_tempered_mechanisms():
    message = _refusal(_logistic(True), public=["X"], mechanism="ops")
    assert message.startswith("y: unsupported likelihood: a Bernoulli whose parameter is computed")
    assert "; ".join(TEMPERED_PATTERNS) in message
    assert len(TEMPERED_PATTERNS) == 6 and "TruncatedBeta" in TEMPERED_PATTERNS[0]


def test_another_distribution_is_refused_as_unsupported():
    def build():
        model = pm.Model()
        with model:
            pm.StudentT("t", nu=3, mu=pm.Normal("mu"), sigma=1, observed=Y)
        return model

    message = _refusal(build, data_bounds={"t": (-2, 2)})
    assert re.match(r"t: unsupported likelihood: a StudentTRV likelihood\. The Laplace", message)
    message = _refusal(build, mechanism="ops", data_bounds={"t": (-2, 2)})
    assert "t: unsupported likelihood: a StudentTRV likelihood. The posterior-sampling" in message


def _wrapped_probability():
    model = pm.Model()
    with model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=pm.Deterministic("p_det", p), observed=OUTCOME)
    return model


def _wrapped_regression_mean():
    model = pm.Model()
    with model:
        covariates = pm.Data("X", X)
        beta = pm.Normal("beta", 0, 1, shape=2)
        alpha = pm.Normal("alpha")
        mean = pm.Deterministic("m", covariates @ beta + alpha)
        pm.Normal("y", mu=mean, sigma=pm.HalfNormal("sigma"), observed=Y)
    return model


def _wrapped_tempered_mean():
    model = pm.Model()
    with model:
        mu = pm.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu=pm.Deterministic("m", mu), sigma=1.0, observed=Y)
    return model


def _wrapped_tempered_probability():
    model = pm.Model()
    with model:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        pm.Bernoulli("y", p=pm.Deterministic("p_det", p), observed=OUTCOME)
    return model


@pytest.mark.parametrize(
    ("build", "options", "role", "name", "wrapped"),
    [
        (_wrapped_probability, {}, "probability", "p_det", "p"),
        (_wrapped_regression_mean, {"data_bounds": {"y": (-2, 2), "X": (0, 1)}}, "mean", "m", ""),
        (
            _wrapped_tempered_mean,
            {"mechanism": "ops", "data_bounds": {"y": (-2, 2)}},
            "parameter",
            "m",
            "mu",
        ),
        (_wrapped_tempered_probability, {"mechanism": "ops"}, "parameter", "p_det", "p"),
    ],
    ids=["laplace-beta", "laplace-regression", "ops-normal", "ops-beta"],
)
def test_a_deterministic_around_a_handled_parameter_is_named_with_the_fix(
    build, options, role, name, wrapped
):
    message = _refusal(build, **options)
    assert message.startswith(f"y: its {role} is the pm.Deterministic {name!r}; remove the ")
    assert "does not look through a Deterministic" in message
    if wrapped:
        assert f"pass {wrapped} to it directly" in message
    _no_values(message)


def test_a_deterministic_beside_the_likelihood_stays_accepted():
    """The fix the message gives is accepted: the Deterministic kept beside the likelihood."""
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Deterministic("p_det", p)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
    blocks = pymc_dp.analysis.recognise(model, "laplace").blocks
    assert list(blocks) == ["y"] and blocks["y"].prior == "p"
