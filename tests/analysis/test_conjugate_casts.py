"""The conjugate recogniser reads the records, group labels and trials as is, or refuses.

Review finding (the bounded recogniser's cast bug, on the conjugate route): the record reader
looked through any number of casts, so ``pm.Bernoulli("y", p[pt.cast(g, "int8")], ...)`` with
labels 195–199 (wrapped to negative indices in the likelihood, unwrapped in the released
counts) and ``pm.Binomial(..., observed=pt.cast(y_data, "int8"))`` with counts above 127 were
accepted: the released statistics belonged to another model than the one written. The one
rule (:func:`pymc_dp.graph.reading.require_as_is`, shared with the bounded recogniser) now
refuses every transformation between a private container and a Beta/Dirichlet likelihood —
observed values, group labels (index arrays) and per-record trials — in recognition, before
any release, ledger charge or noise draw, naming the variable and the operations, never a
value. PyMC's own cast of the observed values to the likelihood's integer dtype is the one
wrapper let through.
"""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.subtensor import AdvancedSubtensor

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.analysis.conjugate import find_conjugate_link
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.families.base import ConjugateLink

RNG = np.random.default_rng(11)
N = 30
OUTCOME = RNG.integers(0, 2, N)
GROUPS = RNG.integers(0, 3, N)
WRAPPING = GROUPS + 197  # 197..199: an int8 cast wraps them to -59..-57
BIG = RNG.integers(180, 250, N)  # counts above 127: an int8 cast wraps them
TRIALS = RNG.integers(1, 6, N)
COUNTS = np.minimum(RNG.integers(0, 6, N), TRIALS)
ROWS = np.tile([1, 2, 2], (N, 1))  # Multinomial records of 5 trials
SENTINELS = ("197", "198", "199", str(BIG[0]), "300")  # values no message may show
QUIET = {"chains": 1, "progressbar": False, "compute_convergence_checks": False}


def _sample(model, ledger, noise, mechanism="laplace", **kwargs):
    tune = {"tune": 5} if mechanism == "laplace" else {}  # exact one-sample draws: no tuning
    return pymc_dp.sample(
        5,
        epsilon=1.0,
        model=model,
        mechanism=mechanism,
        ledger=ledger,
        noise_backend="numpy",
        noise_rng=noise,
        **tune,
        **QUIET,
        **kwargs,
    )


def _refused(model, match, error=NonPrivateModelError, **kwargs):
    """pymc_dp.sample refuses: the message matches, the ledger is empty, no noise drawn."""
    ledger = PrivacyLedger()
    noise = np.random.default_rng(0)
    state = noise.bit_generator.state
    with pytest.raises(error, match=match) as raised:
        _sample(model, ledger, noise, **kwargs)
    assert len(ledger) == 0 and noise.bit_generator.state == state
    message = str(raised.value)
    assert error is not NonPrivateModelError or "Nothing was released" in message
    assert not any(value in message for value in SENTINELS)
    return message


def _as_is(name, what, found):
    return re.escape(
        f"{name}: its {what} are computed in the model graph: the {what} of {name!r} must be "
        f"an array or a pm.Data container used as is; found {found}."
    )


def bernoulli(labels=None, observed=lambda: OUTCOME, n_groups=3, prior=None):
    with pm.Model() as model:
        if prior is not None:
            p = prior(n_groups)
        elif labels is None:
            p = pm.Beta("p", 1.0, 1.0)
        else:
            p = pm.Beta("p", 1.0, 1.0, shape=n_groups)
        pm.Bernoulli("y", p if labels is None else p[labels()], observed=observed())
    return model


def binomial(trials=lambda: 300, observed=lambda: OUTCOME):
    with pm.Model() as model:
        pm.Binomial("y", n=trials(), p=pm.Beta("p", 1.0, 1.0), observed=observed())
    return model


def multinomial(trials=lambda: 5, observed=lambda: ROWS, labels=None, n_groups=3):
    with pm.Model() as model:
        shape = (3,) if labels is None else (n_groups, 3)
        p = pm.Dirichlet("p", np.ones(3), shape=shape)
        pm.Multinomial("y", n=trials(), p=p if labels is None else p[labels()], observed=observed())
    return model


def categorical(labels, observed=lambda: GROUPS, n_groups=3):
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(3), shape=(n_groups, 3))
        pm.Categorical("y", p=p[labels()], observed=observed())
    return model


# --- group labels ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels, found, n_groups",
    [
        # the reported model: labels 197..199 wrap to -59..-57, which index from the end
        (lambda: pt.cast(pm.Data("g", WRAPPING), "int8"), "Cast{int8}(g)", 200),
        (lambda: pt.cast(pm.Data("g", GROUPS + 0.0), "int64"), "Cast{int64}(g)", 3),
        (lambda: pt.cast(pm.Data("g", GROUPS + 0.5), "int64"), "Cast{int64}(g)", 3),
        # default deny: even a value-preserving (widening) cast is refused
        (lambda: pt.cast(pm.Data("g", GROUPS), "int64"), "Cast{int64}(g)", 3),
        (lambda: pm.Data("g", GROUPS) + 0, "Add(g, constant)", 3),
        (lambda: pm.Data("g", WRAPPING) % 3, "Mod(g, constant)", 3),
        (lambda: pm.Data("g", GROUPS)[::-1], "Subtensor(g, constant)", 3),
        (lambda: pt.cast(pt.as_tensor(WRAPPING), "int8"), "Cast{int8}(constant)", 200),
    ],
    ids=[
        "int8-wrap",
        "cast-whole-floats",
        "cast-fractions",
        "widening",
        "add",
        "mod",
        "reversed",
        "cast-constant",
    ],
)
def test_transformed_group_labels_are_refused(labels, found, n_groups):
    message = _refused(bernoulli(labels, n_groups=n_groups), _as_is("y", "group labels", found))
    assert "group labels are computed in the model graph" in message


def test_transformed_group_labels_of_dirichlet_likelihoods_are_refused():
    wrap = lambda: pt.cast(pm.Data("g", WRAPPING), "int8")  # noqa: E731
    found = _as_is("y", "group labels", "Cast{int8}(g)")
    _refused(categorical(wrap, n_groups=200), found)
    _refused(multinomial(labels=wrap, n_groups=200), found)


def test_the_reported_label_cast_is_refused_in_recognition():
    """Refused by recognise itself (and by the recogniser the Gibbs step uses), before any
    mechanism runs."""
    model = bernoulli(lambda: pt.cast(pm.Data("g", WRAPPING), "int8"), n_groups=200)
    match = _as_is("y", "group labels", "Cast{int8}(g)")
    with pytest.raises(NonPrivateModelError, match=match):
        recognise(model, "laplace")
    with pytest.raises(NonPrivateModelError, match=match):
        find_conjugate_link(model, model["y"])


# --- observed values ------------------------------------------------------------------------
def test_the_reported_count_cast_is_refused():
    """An int8 cast wraps counts above 127: the likelihood would read other counts than the
    validated and released ones. PyMC wraps the written cast in casts of its own."""
    model = binomial(observed=lambda: pt.cast(pm.Data("y_data", BIG), "int8"))
    found = "Cast{int64}(Cast{int32}(Cast{int8}(y_data)))"
    _refused(model, _as_is("y", "observed values", found))


@pytest.mark.parametrize(
    "observed, found",
    [
        (
            lambda: pt.cast(pm.Data("y_data", OUTCOME + 0.0), "int64"),
            "Cast{int64}(Cast{int32}(Cast{int64}(y_data)))",
        ),
        (
            lambda: pt.cast(pm.Data("y_data", OUTCOME), "float64"),
            "Cast{int64}(Cast{float64}(y_data))",
        ),
        (lambda: pm.Data("y_data", OUTCOME) * 1, "Cast{int64}(Mul(y_data, constant))"),
        (lambda: pm.Data("y_data", OUTCOME)[::-1], "Cast{int64}(Subtensor(y_data, constant))"),
        (
            lambda: pt.cast(pt.as_tensor(OUTCOME), "int8"),
            "Cast{int64}(Cast{int32}(Cast{int8}(constant)))",
        ),
    ],
    ids=["cast-float-to-int", "cast-to-float", "scale", "reversed", "cast-constant"],
)
def test_transformed_bernoulli_records_are_refused(observed, found):
    _refused(bernoulli(observed=observed), _as_is("y", "observed values", found))


def test_transformed_categorical_and_multinomial_records_are_refused():
    _refused(
        categorical(lambda: GROUPS, observed=lambda: pm.Data("y_data", WRAPPING) % 3),
        _as_is("y", "observed values", "Cast{int64}(Mod(y_data, constant))"),
    )
    _refused(
        multinomial(observed=lambda: pt.cast(pm.Data("y_data", ROWS), "int8")),
        _as_is("y", "observed values", "Cast{int64}(Cast{int32}(Cast{int8}(y_data)))"),
    )


# --- trials ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "trials, found",
    [
        (lambda: pt.cast(pm.Data("n", np.full(N, 300)), "int8"), "Cast{int8}(n)"),
        (lambda: pt.cast(pm.Data("n", TRIALS + 0.0), "int64"), "Cast{int64}(n)"),
        (lambda: pm.Data("n", TRIALS) * 2, "Mul(n, constant)"),
        (lambda: pm.Data("n", TRIALS)[::-1], "Subtensor(n, constant)"),
    ],
    ids=["int8-wrap", "cast-floats", "scale", "reversed"],
)
def test_transformed_per_record_trials_are_refused(trials, found):
    model = binomial(trials=trials, observed=lambda: COUNTS)
    _refused(model, _as_is("y", "per-record trials", found), max_trials={"y": 300})


def test_transformed_multinomial_trials_are_refused():
    trials = lambda: pt.cast(pm.Data("n", np.full(N, 5)), "int8")  # noqa: E731
    _refused(
        multinomial(trials=trials),
        _as_is("y", "per-record trials", "Cast{int8}(n)"),
        max_trials={"y": 5},
    )


def test_refusal_comes_before_a_missing_max_trials():
    """The form is refused whatever else is wrong with the declarations."""
    model = binomial(trials=lambda: pt.cast(pm.Data("n", TRIALS), "int8"), observed=lambda: COUNTS)
    _refused(model, _as_is("y", "per-record trials", "Cast{int8}(n)"))


# --- the shared rule protects the tempered recogniser too ----------------------------------
def test_the_tempered_route_refuses_the_same_forms():
    truncated = lambda n_groups: TruncatedBeta("p", 1.0, 1.0, 0.1, shape=n_groups)  # noqa: E731
    plain = bernoulli(lambda: pm.Data("g", GROUPS), prior=truncated)
    ledger = PrivacyLedger()
    _sample(plain, ledger, np.random.default_rng(0), mechanism="ops")
    assert len(ledger) == 1  # the same model with the labels as is: sampled and charged
    model = bernoulli(
        lambda: pt.cast(pm.Data("g", WRAPPING), "int8"), n_groups=200, prior=truncated
    )
    _refused(model, _as_is("y", "group labels", "Cast{int8}(g)"), mechanism="ops")
    with pm.Model() as counts:
        p = TruncatedBeta("p", 1.0, 1.0, 0.1)
        pm.Binomial("y", n=300, p=p, observed=pt.cast(pm.Data("y_data", BIG), "int8"))
    found = "Cast{int64}(Cast{int32}(Cast{int8}(y_data)))"
    _refused(counts, _as_is("y", "observed values", found), mechanism="ops")


# --- accepted forms -------------------------------------------------------------------------
def _link(model, **kwargs) -> ConjugateLink:
    [link] = recognise(model, "laplace", **kwargs).blocks.values()
    assert isinstance(link, ConjugateLink)
    return link


def test_pymc_own_cast_of_integer_records_is_let_through():
    """pm.Data stores integers as int32; PyMC casts them to the Bernoulli's int64 (widening)."""
    model = bernoulli(observed=lambda: pm.Data("y_data", OUTCOME))
    value = model.rvs_to_values[model["y"]]
    assert isinstance(value.owner.op, Elemwise)  # Cast{int64}(y_data)
    assert isinstance(value.owner.inputs[0], SharedVariable)
    np.testing.assert_array_equal(_link(model).data, OUTCOME)


def test_labels_from_an_integer_container_are_read_as_is():
    model = bernoulli(lambda: pm.Data("g", GROUPS))
    index = model["y"].owner.op.dist_params(model["y"].owner)[-1]
    assert isinstance(index.owner.op, AdvancedSubtensor)
    assert index.owner.inputs[1] is model["g"]  # no wrapper between pm.Data and p[g]
    link = _link(model)
    np.testing.assert_array_equal(link.groups, GROUPS)
    assert link.n_groups == 3
    link = _link(categorical(lambda: pm.Data("g", GROUPS), observed=lambda: pm.Data("c", GROUPS)))
    np.testing.assert_array_equal(link.groups, GROUPS)


def test_float_counts_that_pymc_casts_to_integers_are_let_through():
    """A float container under PyMC's cast to integer counts is read before the cast, so
    validation sees the values the user gave."""
    model = binomial(trials=lambda: 5, observed=lambda: pm.Data("y_data", COUNTS + 0.0))
    link = _link(model)
    np.testing.assert_array_equal(link.data, COUNTS)
    assert link.domain.trials == 5
    model = multinomial(observed=lambda: pm.Data("y_data", ROWS + 0.0))
    np.testing.assert_array_equal(_link(model).data, ROWS)


def test_fractional_records_under_pymc_cast_are_refused_by_validation():
    """The float-to-integer cast is let through because validation refuses what it would
    truncate: a record of 0.5 is refused, not read as 0."""
    model = bernoulli(observed=lambda: pm.Data("y_data", OUTCOME + 0.5))
    _refused(model, "whole numbers", error=InvalidPrivateDataError)


def test_per_record_trials_are_read_as_is():
    model = binomial(trials=lambda: pm.Data("n", TRIALS), observed=lambda: COUNTS)
    link = _link(model, max_trials={"y": 10})
    np.testing.assert_array_equal(link.domain.trials, TRIALS)
    model = binomial(trials=lambda: pm.Data("n", TRIALS + 0.0), observed=lambda: COUNTS)
    np.testing.assert_array_equal(_link(model, max_trials={"y": 10}).domain.trials, TRIALS)
    model = multinomial(trials=lambda: pm.Data("n", np.full(N, 5)))
    np.testing.assert_array_equal(_link(model, max_trials={"y": 5}).domain.trials, 5)


def test_one_public_number_of_trials_is_read_as_the_likelihood_computes_it():
    """A public scalar is no record: it is read through the graph, casts included (300 as
    int8 is 44), so the released statistics use the trials the likelihood uses."""
    model = binomial(trials=lambda: pt.cast(pm.Data("n", 300), "int8"))
    link = _link(model, public=["n"])
    assert link.domain.trials == 300 - 256 == 44


def test_an_accepted_model_is_released_once():
    """End to end through the public API: PyMC's own casts are released and charged once."""
    model = bernoulli(lambda: pm.Data("g", GROUPS), observed=lambda: pm.Data("y_data", OUTCOME))
    ledger = PrivacyLedger()
    noise = np.random.default_rng(0)
    state = noise.bit_generator.state
    idata = _sample(model, ledger, noise)
    assert len(ledger) == 1 and noise.bit_generator.state != state
    assert idata["posterior"]["p"].shape[-1] == 3
    model = binomial(trials=lambda: pm.Data("n", TRIALS), observed=lambda: COUNTS + 0.0)
    ledger = PrivacyLedger()
    _sample(model, ledger, np.random.default_rng(1), max_trials={"y": 10})
    assert len(ledger) == 1
