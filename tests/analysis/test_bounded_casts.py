"""The bounded recogniser reads the records, group labels and covariates as is, or refuses.

Review finding: ``pm.Normal("y", mu=alpha + pt.cast(X, "int64") @ beta, ...)`` was accepted and
the statistics of the float covariates were released while the likelihood reads the truncated
ones (a posterior for another model). Every transformation between a private container and the
likelihood (cast, scaling, slice, power, join, ...) is now refused in recognition, before any
release or ledger charge, with a message that names the observed variable and the operations
found, never a value. PyMC's own cast of the observed values to the likelihood's dtype (a
widening cast, or float counts to the Poisson's integers, validated whole) is the one wrapper
let through.
"""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.families import BoundedLink

RNG = np.random.default_rng(3)
N = 30
X = RNG.uniform(0.1, 0.9, (N, 2))
X[0, 0] = 0.7182818  # a sentinel: no message may show a covariate
Y = np.clip(0.5 + X @ [1.0, -1.0] + RNG.normal(0, 0.2, N), -2, 3)
COUNTS = RNG.poisson(2.0, N)
GROUPS = RNG.integers(0, 3, N)
BOUNDS = {"y": (-2, 3), "X": (0, 1)}


def regression(mean, observed=lambda: Y, x=X, n_coef=2):
    with pm.Model() as model:
        covariates = pm.Data("X", x)
        beta = pm.Normal("beta", shape=n_coef)
        alpha = pm.Normal("alpha")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", mu=mean(covariates, beta, alpha), sigma=sigma, observed=observed())
    return model


def normal(observed):
    with pm.Model() as model:
        pm.Normal("y", pm.Normal("mu"), pm.HalfNormal("sigma"), observed=observed())
    return model


def poisson(labels=None, observed=lambda: COUNTS, n_groups=3):
    with pm.Model() as model:
        if labels is None:
            rate = pm.Gamma("lam", 2, 1)
        else:
            rate = pm.Gamma("lam", 2, 1, shape=n_groups)[labels()]
        pm.Poisson("c", rate, observed=observed())
    return model


def _refused(model, match, data_bounds):
    """pymc_dp.sample refuses: the message matches, the ledger is empty, no noise drawn."""
    ledger = PrivacyLedger()
    noise = np.random.default_rng(0)
    state = noise.bit_generator.state
    with pytest.raises(NonPrivateModelError, match=match) as raised:
        pymc_dp.sample(
            5,
            epsilon=1.0,
            model=model,
            data_bounds=data_bounds,
            ledger=ledger,
            noise_backend="numpy",
            noise_rng=noise,
            tune=5,
            chains=1,
            progressbar=False,
        )
    assert len(ledger) == 0 and noise.bit_generator.state == state
    message = str(raised.value)
    assert "Nothing was released" in message
    assert "7182818" not in message and "0.718" not in message
    return message


def _as_is(name, what, found):
    return re.escape(
        f"{name}: its {what} are computed in the model graph: the {what} of {name!r} must be "
        f"an array or a pm.Data container used as is; found {found}."
    )


# --- covariates -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mean, found, n_coef",
    [
        (lambda x, b, a: a + pt.cast(x, "int64") @ b, "Cast{int64}(X)", 2),
        (lambda x, b, a: pt.cast(x, "int64") @ b + a, "Cast{int64}(X)", 2),
        (lambda x, b, a: pm.math.dot(pt.cast(x, "int32"), b), "Cast{int32}(X)", 2),
        (lambda x, b, a: x.astype("float32") @ b + a, "Cast{float32}(X)", 2),
        (lambda x, b, a: (x * 2.0) @ b + a, "Mul(X, constant)", 2),
        (lambda x, b, a: (x / 10.0) @ b + a, "True_div(X, constant)", 2),
        (lambda x, b, a: (x + 0.0) @ b + a, "Add(X, constant)", 2),
        (lambda x, b, a: (x**2) @ b + a, "Pow(X, constant)", 2),
        (lambda x, b, a: pt.exp(x) @ b + a, "Exp(X)", 2),
        (lambda x, b, a: x[:, :1] @ b + a, "Subtensor(X, constant)", 1),
        (lambda x, b, a: x[::-1] @ b + a, "Subtensor(X, constant)", 2),
        (lambda x, b, a: x.T.T @ b + a, "MatrixTranspose(MatrixTranspose(X))", 2),
        (
            lambda x, b, a: pt.concatenate([x, pt.ones((N, 1))], axis=1) @ b,
            "Join(X, Alloc(constant, constant, constant))",
            3,
        ),
        (
            lambda x, b, a: pt.concatenate([x, pt.as_tensor(X[:, :1])], axis=1) @ b + a,
            "Join(X, constant)",
            3,
        ),
    ],
    ids=[
        "cast-int64-intercept-first",
        "cast-int64",
        "dot-cast-int32",
        "astype-float32",
        "scale",
        "divide",
        "add-zero",
        "square",
        "exp",
        "column-slice",
        "row-reversal",
        "double-transpose",
        "stack-ones",
        "stack-constant",
    ],
)
def test_transformed_covariates_are_refused(mean, found, n_coef):
    message = _refused(regression(mean, n_coef=n_coef), _as_is("y", "covariates", found), BOUNDS)
    assert "covariates are computed in the model graph" in message


def test_widening_casts_of_covariates_are_refused_too():
    """Default deny: even a value-preserving cast (int container to float) is refused; the
    container must be used as is (an integer pm.Data in X @ beta needs no cast)."""
    ints = np.round(X * 10).astype(int)
    model = regression(lambda x, b, a: pt.cast(x, "float64") @ b + a, x=ints)
    _refused(model, _as_is("y", "covariates", "Cast{float64}(X)"), {"y": (-2, 3), "X": (0, 10)})


def test_a_cast_constant_covariate_matrix_is_refused_without_showing_it():
    with pm.Model() as model:
        beta = pm.Normal("beta", shape=2)
        pm.Normal("y", mu=pt.cast(pt.as_tensor(X), "int64") @ beta, sigma=1.0, observed=Y)
    found = "Cast{int64}(constant)"
    _refused(model, _as_is("y", "covariates", found), {"y": (-2, 3), "y_covariates": (0, 1)})


def test_the_reviewed_cast_model_is_refused_in_recognition():
    """The reported model: refused by recognise itself, before any mechanism runs."""
    model = regression(lambda x, b, a: a + pt.cast(x, "int64") @ b)
    with pytest.raises(NonPrivateModelError, match=_as_is("y", "covariates", "Cast{int64}(X)")):
        recognise(model, "laplace", data_bounds=BOUNDS)


# --- observed values ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "observed, found",
    [
        (
            lambda: pt.cast(pm.Data("y_data", Y), "int64"),
            "Cast{float64}(Cast{int32}(Cast{int64}(y_data)))",
        ),
        (lambda: pm.Data("y_data", Y) * 1.0, "Mul(y_data, constant)"),
        (lambda: pm.Data("y_data", Y)[::-1], "Subtensor(y_data, constant)"),
        (lambda: pt.cast(pt.as_tensor(Y), "float32"), "Cast{float64}(Cast{float32}(constant))"),
    ],
    ids=["cast-int64", "scale", "reversed", "cast-float32-constant"],
)
def test_transformed_observed_values_are_refused(observed, found):
    match = _as_is("y", "observed values", found)
    _refused(regression(lambda x, b, a: x @ b + a, observed=observed), match, BOUNDS)
    _refused(normal(observed), match, {"y": (-2, 3)})


def test_transformed_poisson_counts_are_refused():
    """An int8 cast wraps counts above 127: the likelihood would read other counts than the
    validated ones."""
    big = COUNTS + 120
    _refused(
        poisson(observed=lambda: pt.cast(pm.Data("c_data", big), "int8")),
        _as_is("c", "observed values", "Cast{int64}(Cast{int32}(Cast{int8}(c_data)))"),
        {"c": (0, 200)},
    )
    _refused(
        poisson(observed=lambda: pt.cast(pm.Data("c_data", COUNTS + 0.0), "int64")),
        _as_is("c", "observed values", "Cast{int64}(Cast{int32}(Cast{int64}(c_data)))"),
        {"c": (0, 20)},
    )
    _refused(
        poisson(observed=lambda: pm.Data("c_data", COUNTS) // 2),
        _as_is("c", "observed values", "Cast{int64}(Int_div(c_data, constant))"),
        {"c": (0, 20)},
    )


# --- group labels ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels, found, n_groups",
    [
        (lambda: pt.cast(pm.Data("g", GROUPS + 0.0), "int64"), "Cast{int64}(g)", 3),
        (lambda: pt.cast(pm.Data("g", GROUPS + 0.5), "int64"), "Cast{int64}(g)", 3),
        # int8 wraps labels above 127 to negative indices, which index from the end
        (lambda: pt.cast(pm.Data("g", GROUPS + 197), "int8"), "Cast{int8}(g)", 200),
        (lambda: pm.Data("g", GROUPS) + 0, "Add(g, constant)", 3),
        (lambda: pm.Data("g", GROUPS) % 3, "Mod(g, constant)", 3),
        (lambda: pt.cast(pt.as_tensor(GROUPS), "int32"), "Cast{int32}(constant)", 3),
        (
            lambda: pm.Data("g2", GROUPS)[pm.Data("g", np.arange(N))],
            "AdvancedSubtensor(g2, g)",
            3,
        ),
    ],
    ids=["cast-whole-floats", "cast-fractions", "int8-wrap", "add", "mod", "cast-const", "nested"],
)
def test_transformed_group_labels_are_refused(labels, found, n_groups):
    model = poisson(labels, n_groups=n_groups)
    _refused(model, _as_is("c", "group labels", found), {"c": (0, 20)})


def test_refusal_comes_before_a_missing_bound():
    """The form is refused in recognition, whatever else is wrong with the declarations."""
    model = regression(lambda x, b, a: pt.cast(x, "int64") @ b + a)
    _refused(model, _as_is("y", "covariates", "Cast{int64}(X)"), {"y": (-2, 3)})


# --- accepted forms -------------------------------------------------------------------------
def _product_inputs(model):
    """The matrix inputs of every matrix product in the likelihood's mean."""
    mean = model["y"].owner.inputs[2]
    return [
        node.inputs[0]
        for node in {a.owner for a in ancestors([mean]) if a.owner is not None}
        if isinstance(node.op, Dot)
        or (isinstance(node.op, Blockwise) and isinstance(node.op.core_op, Dot))
    ]


@pytest.mark.parametrize(
    "mean, roles",
    [
        (lambda x, b, a: x @ b, {"beta", "sigma"}),
        (lambda x, b, a: pm.math.dot(x, b), {"beta", "sigma"}),
        (lambda x, b, a: x @ b + a, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: a + x @ b, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: pm.math.dot(x, b) + a, {"beta", "alpha", "sigma"}),
        (lambda x, b, a: a + pm.math.dot(x, b), {"beta", "alpha", "sigma"}),
    ],
    ids=["X@b", "dot", "X@b+a", "a+X@b", "dot+a", "a+dot"],
)
def test_plain_products_read_the_container_itself_and_are_recognised(mean, roles):
    model = regression(mean)
    [matrix] = _product_inputs(model)
    assert matrix is model["X"]  # PyMC puts no wrapper between pm.Data and the product
    [link] = recognise(model, "laplace", data_bounds=BOUNDS).blocks.values()
    assert isinstance(link, BoundedLink)
    assert link.structure.family.name == "linear-regression"
    assert set(link.structure.parameters) == roles
    np.testing.assert_array_equal(link.covariates, X)


def test_integer_and_constant_covariates_are_read_as_is():
    ints = np.round(X * 10).astype(int)
    model = regression(lambda x, b, a: x @ b + a, x=ints)
    [matrix] = _product_inputs(model)
    assert matrix is model["X"] and "int" in matrix.dtype  # no cast to float in the graph
    [link] = recognise(model, "laplace", data_bounds={"y": (-2, 3), "X": (0, 10)}).blocks.values()
    np.testing.assert_array_equal(link.covariates, ints)
    with pm.Model() as constant:
        beta = pm.Normal("beta", shape=2)
        pm.Normal("y", mu=X @ beta, sigma=1.0, observed=Y)
    [matrix] = _product_inputs(constant)
    assert isinstance(matrix, Constant)
    bounds = {"y": (-2, 3), "y_covariates": (0, 1)}
    [link] = recognise(constant, "laplace", data_bounds=bounds).blocks.values()
    np.testing.assert_array_equal(link.covariates, X)


def test_pymc_own_casts_of_the_observed_values_are_let_through():
    """PyMC casts an integer container to a Normal's floats and float counts to a Poisson's
    integers (validated whole): one cast to the likelihood's dtype, on the container."""
    whole = np.round(Y).astype(int)
    model = normal(lambda: pm.Data("y_data", whole))
    value = model.rvs_to_values[model["y"]]
    assert isinstance(value.owner.inputs[0], SharedVariable)  # Cast{float64}(y_data)
    [link] = recognise(model, "laplace", data_bounds={"y": (-2, 3)}).blocks.values()
    np.testing.assert_array_equal(link.data, whole)
    model = regression(lambda x, b, a: x @ b + a, observed=lambda: pm.Data("y_data", whole))
    [link] = recognise(model, "laplace", data_bounds=BOUNDS).blocks.values()
    np.testing.assert_array_equal(link.data, whole)
    model = poisson(lambda: pm.Data("g", GROUPS), observed=lambda: pm.Data("c_data", COUNTS + 0.0))
    [link] = recognise(model, "laplace", data_bounds={"c": (0, 20)}).blocks.values()
    np.testing.assert_array_equal(link.data, COUNTS)
    np.testing.assert_array_equal(link.groups, GROUPS)
    assert link.structure.n_groups == 3


@pytest.mark.integration
def test_an_accepted_regression_is_released_once():
    """End to end through the public API: the accepted form is released and charged once."""
    model = regression(lambda x, b, a: pm.math.dot(x, b))
    ledger = PrivacyLedger()
    pymc_dp.sample(
        5,
        epsilon=1.0,
        model=model,
        data_bounds=BOUNDS,
        ledger=ledger,
        noise_backend="numpy",
        noise_rng=np.random.default_rng(0),
        tune=5,
        chains=1,
        progressbar=False,
        compute_convergence_checks=False,
    )
    assert len(ledger) == 1
