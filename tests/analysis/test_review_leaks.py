"""Regression tests for the leaks an adversarial review found in the first default-deny
classifier (each recovered private values through pymc_dp.sample). Every one is now refused
before anything is released or charged."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.distributions import TruncatedBeta

RNG = np.random.default_rng(0)
N = 40
GROUP = RNG.integers(0, 3, N)
OUTCOME = RNG.integers(0, 2, N)
X_PRIVATE = RNG.normal(size=N)
QUIET = {"progressbar": False, "chains": 1, "tune": 5}


def _base(truncated=False):
    model = pm.Model(coords={"group": list("abc")})
    with model:
        if truncated:
            rate = TruncatedBeta("rate", 1.0, 1.0, 0.1, dims="group")
        else:
            rate = pm.Beta("rate", 1.0, 1.0, dims="group")
        pm.Bernoulli("outcome", p=rate[GROUP], observed=OUTCOME)
    return model, rate


def _refused(model, match=None, mechanism="laplace", **kwargs):
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=match):
        pymc_dp.sample(
            5, epsilon=1.0, mechanism=mechanism, model=model, ledger=ledger, **QUIET, **kwargs
        )
    assert len(ledger) == 0


def _scan_copy(values):
    out, _ = pytensor.scan(lambda i: pt.as_tensor(values)[i], sequences=[pt.arange(N)])
    return out


LEAKS = {
    # L1: the same private array sets a shape and a prior mean
    "shape_and_mean": lambda r: pm.Normal(
        "u", mu=pt.as_tensor(X_PRIVATE), sigma=1e-3, shape=pt.as_tensor(X_PRIVATE).shape
    ),
    # L2: a size computed from the records
    "computed_size": lambda r: pm.Normal("z", 0, 1, size=(pt.as_tensor(OUTCOME).sum(),)),
    # L3: constants inside inner graphs and closures
    "scan": lambda r: pm.Deterministic("copy", _scan_copy(X_PRIVATE) + 0 * r[0]),
    "op_from_graph": lambda r: pm.Deterministic(
        "copy", OpFromGraph([r], [r.sum() + pt.as_tensor(X_PRIVATE)])(r)
    ),
    "custom_dist_dist": lambda r: pm.CustomDist(
        "leak",
        dist=lambda size: pm.Normal.dist(mu=pt.as_tensor(X_PRIVATE), sigma=1e-4, size=size),
        shape=(N,),
    ),
    "custom_dist_logp_closure": lambda r: pm.CustomDist(
        "leak", 0.0, logp=lambda v, m: -((v - pt.as_tensor(X_PRIVATE).mean()) ** 2)
    ),
    "as_op": lambda r: pm.Deterministic(
        "copy",
        pytensor.compile.ops.as_op(itypes=[pt.dvector], otypes=[pt.dvector])(
            lambda v: v + GROUP[:3]
        )(r),
    ),
    # L6: a record-derived array of another length, and reshaped labels
    "subset_of_records": lambda r: pm.Normal("u", mu=X_PRIVATE[1:], sigma=1e-3),
    "reshaped_labels": lambda r: pm.Normal("u", mu=GROUP.reshape(2, N // 2) * 1.0, sigma=1e-3),
}


@pytest.mark.parametrize("leak", list(LEAKS))
def test_review_leak_is_refused(leak):
    model, rate = _base()
    with model:
        LEAKS[leak](rate)
    _refused(model)


def test_review_leak_is_refused_under_ops_too():
    model, rate = _base(truncated=True)
    with model:
        LEAKS["shape_and_mean"](rate)
    _refused(model, mechanism="ops")


def test_mechanism_calibration_cannot_read_records():
    """L4: a Normal σ or a scalar number of trials computed from the records would put a
    statistic of the data into T, the sensitivity and the ledger."""
    x = np.clip(RNG.normal(5, 2, N), 0, 10)
    with pm.Model() as sigma_from_data:
        mu = pm.TruncatedNormal("mu", 5, 5, lower=0, upper=10)
        pm.Normal("x", mu=mu, sigma=pt.as_tensor(x).std(), observed=x)
    _refused(sigma_from_data, match="'x' reads", mechanism="ops", data_bounds={"x": (0, 10)})
    trials = RNG.integers(1, 40, N)
    with pm.Model() as trials_from_data:
        p = pm.Beta("p", 1, 1)
        pm.Binomial("y", n=pt.as_tensor(trials).max(), p=p, observed=np.minimum(trials, 3))
    _refused(trials_from_data, match="'y' reads")


@pytest.mark.parametrize(
    "observed, match",
    [
        (lambda: pt.cumsum(pt.as_tensor(OUTCOME)) % 2, "observed values are computed"),
        (lambda: (pt.as_tensor(OUTCOME) + pt.roll(pt.as_tensor(OUTCOME), 1)) % 2, "computed"),
    ],
)
def test_records_computed_in_the_graph_are_refused(observed, match):
    """L5: a transformation of the records changes what one record can move."""
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=observed())
    _refused(model, match=match)


def test_group_labels_computed_in_the_graph_are_refused():
    with pm.Model() as model:
        rate = pm.Beta("rate", 1, 1, shape=2)
        index = pt.cast(pt.as_tensor(X_PRIVATE) > np.median(X_PRIVATE), "int64")
        pm.Bernoulli("y", p=rate[index], observed=OUTCOME)
    _refused(model, match="group labels are computed")


@pytest.mark.integration
def test_public_arrays_still_work_everywhere():
    """The stricter line keeps ordinary public uses: declared pm.Data in a prior mean, a
    Deterministic and a size; shapes of public arrays; literal shapes."""
    model, _ = _base()
    with model:
        prior_means = pm.Data("prior_means", np.array([0.1, 0.2, 0.3, 0.4]))
        w = pm.Normal("w", mu=prior_means, sigma=1.0, shape=prior_means.shape)
        pm.Deterministic("w_plus", w + prior_means)
        pm.Normal("v", 0.0, 1.0, shape=(2, 3))
    idata = pymc_dp.sample(5, epsilon=1.0, model=model, public=["prior_means"], **QUIET)
    assert idata["posterior"]["w_plus"].shape[-1] == 4


# --- second review (bounded families, noise-aware inference) ---------------------------------


def test_shape_of_the_records_is_private_under_add_remove_one():
    # n is public under replace-one (a shape-only read is a design constant) but private under
    # add-remove-one: a Deterministic of the records' length would put the exact n in the trace.
    y = np.random.default_rng(1).normal(0.0, 1.0, 23)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu=mu, sigma=sigma, observed=y)
        pm.Deterministic("n_exact", pt.as_tensor(y).shape[0])
    ledger = PrivacyLedger()
    with model, pytest.raises(NonPrivateModelError, match="n_exact"):
        pymc_dp.sample(
            10,
            epsilon=1.0,
            ledger=ledger,
            neighbouring="add-remove-one",
            data_bounds={"y": (-5, 5)},
            **QUIET,
        )
    assert len(ledger) == 0


def test_options_that_would_fail_after_the_release_are_refused_first():
    model, _ = _base()
    ledger = PrivacyLedger()
    with model, pytest.raises(TypeError, match="noise_rng"):
        pymc_dp.sample(10, epsilon=1.0, ledger=ledger, noise_backend="numpy", noise_rng=1, **QUIET)
    with pm.Model() as initialised:
        p = pm.Beta("p", 1.0, 1.0, initval=0.3)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
    with initialised, pytest.raises(ValueError, match="initval"):
        pymc_dp.sample(10, epsilon=1.0, ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_initvals_of_the_wrong_shape_are_refused_before_the_release():
    model, _ = _base()
    ledger = PrivacyLedger()
    with model, pytest.raises(ValueError, match=r"initvals\['rate'\] has shape \(2,\)"):
        pymc_dp.sample(
            10, epsilon=1.0, ledger=ledger, initvals={"rate": np.array([0.2, 0.3])}, **QUIET
        )
    assert len(ledger) == 0
    with model, pytest.raises(ValueError, match=r"initvals\['rate'\] has shape \(\)"):
        pymc_dp.sample(10, epsilon=1.0, ledger=ledger, initvals={"rate": 0.5}, **QUIET)
    assert len(ledger) == 0
    with model:  # the variable's own shape is accepted
        pymc_dp.sample(5, epsilon=1.0, initvals={"rate": np.full(3, 0.5)}, **QUIET)
