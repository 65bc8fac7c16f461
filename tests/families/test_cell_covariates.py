"""Per-record covariates read per cell through public bins (logistic and Poisson regression).

The bins against their declared edges (closed form and properties), the per-cell parameter
against the bin average of the record-level parameter (quadrature against scipy), the table
against a crosstab, the sensitivity against every neighbouring pair of a small domain (a
record may move between bins), refusals before any charge, and (integration) private
logistic and Poisson regressions against their non-private fits.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.families.bounded import BoundedLink, CovariateBins
from pymc_dp.mechanisms.statistics import release_bounded

RNG = np.random.default_rng(11)
N = 80
X = RNG.uniform(-1.0, 1.0, N)
G = RNG.integers(0, 3, N)
D = RNG.integers(0, 2, N)  # a 0/1 indicator
OUTCOME = RNG.integers(0, 2, N)
COUNTS = RNG.integers(0, 6, N)


def _bins(low, high, bins, levels=False) -> CovariateBins:
    return CovariateBins(
        "x", np.array([low]), np.array([high]), np.array([bins]), np.array([levels])
    )


def test_records_fall_in_the_bin_of_their_declared_edges():
    bins = _bins(-1.0, 1.0, 4)
    values = np.array([-1.0, -0.5 - 1e-12, -0.5, 0.0, 0.4999, 0.5, 1.0])[:, None]
    np.testing.assert_array_equal(bins.index(values, "y", False)[:, 0], [0, 0, 1, 2, 2, 3, 3])
    levels = _bins(0, 3, 4, levels=True)
    np.testing.assert_array_equal(
        levels.index(np.array([[0.0], [3.0], [2.0]]), "y", False), [[0], [3], [2]]
    )


@settings(max_examples=200, deadline=None)
@given(
    low=st.floats(-1e3, 1e3),
    width=st.floats(1e-3, 1e3),
    bins=st.integers(1, 200),
    u=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20),
)
def test_every_value_lies_between_the_edges_of_its_bin(low, width, bins, u):
    high = low + width
    values = np.clip(low + width * np.array(u), low, high)[:, None]
    index = _bins(low, high, bins).index(values, "y", False)[:, 0]
    assert index.min() >= 0 and index.max() <= bins - 1
    edges = low + (high - low) * np.arange(bins + 1) / bins
    slack = 1e-9 * max(abs(low), abs(high), 1.0)
    assert np.all(values[:, 0] >= edges[index] - slack)
    assert np.all(values[:, 0] <= edges[index + 1] + slack)


def _logistic(bins=None, x=X, **bounds):
    """Varying intercepts by a private group and a slope on a private covariate."""

    def build():
        xd, g = pm.Data("x", x), pm.Data("g", G)
        alpha, beta = pm.Normal("alpha"), pm.Normal("beta")
        z = pm.Normal("z", shape=3)
        pm.Bernoulli("y", logit_p=alpha + z[g] + beta * xd, observed=OUTCOME)

    return build


def _link(build, **options):
    with pm.Model() as model:
        build()
    return model, recognise(model, "laplace", **options).blocks["y"]


def test_a_logistic_regression_with_varying_intercepts_is_read_per_cell_of_labels_and_bins():
    _, link = _link(_logistic(), data_bounds={"x": (-1, 1)}, covariate_bins={"x": 4})
    structure = link.structure
    assert structure.family.name == "cell-counts"
    assert structure.label_sizes == (3, 4) and structure.n_groups == 12
    assert structure.describe_bounds() == "y in [0, 1]; x [-1, 1] in 4 bins"
    graph = structure.parameters["probability"]
    inputs = {v.name for v in pytensor.graph.traversal.graph_inputs([graph]) if v.name}
    assert not inputs & {"g", "x", "y"}


def test_the_cell_probability_is_the_bin_average_of_the_record_probability():
    """Cell (g, b): (1/w) ∫ σ(α + z_g + βx) dx over bin b. Two Gauss–Legendre nodes err on
    that mean by at most w⁴ max|f⁗| / 4320, f⁗ = β⁴ σ⁗ (7e-5 here: w = 0.5, β = −2.5)."""
    model, link = _link(_logistic(), data_bounds={"x": (-1, 1)}, covariate_bins={"x": 4})
    point = {"alpha": 0.3, "beta": -2.5, "z": np.array([0.0, 1.0, -0.7])}
    args = [model[k] for k in point]
    cell_p = pytensor.function(args, link.structure.parameters["probability"])(*point.values())
    s = special.expit(np.linspace(-20, 20, 400_001))
    fourth = s * (1 - s) * (1 - 14 * s + 36 * s**2 - 24 * s**3)  # σ⁗ in closed form
    bound = 0.5**4 / 4320 * point["beta"] ** 4 * np.abs(fourth).max()
    assert 5e-5 < bound < 1e-4
    for g, b in itertools.product(range(3), range(4)):
        low, high = -1.0 + 0.5 * b, -0.5 + 0.5 * b
        eta = point["alpha"] + point["z"][g]
        exact = integrate.quad(lambda x, e=eta: special.expit(e + point["beta"] * x), low, high)[0]
        assert cell_p[g * 4 + b] == pytest.approx(exact / 0.5, abs=bound)


def test_statistics_are_the_crosstab_of_labels_bins_and_outcomes():
    _, link = _link(_logistic(), data_bounds={"x": (-1, 1)}, covariate_bins={"x": 4})
    bin_of = np.minimum(((X + 1.0) / 0.5).astype(int), 3)
    expected = np.zeros((12, 2))
    np.add.at(expected, (G * 4 + bin_of, OUTCOME), 1.0)
    np.testing.assert_array_equal(link.statistics(), expected)


def test_a_design_matrix_is_read_column_by_column_with_indicators_at_their_levels():
    x_matrix = np.column_stack([X, D])

    def build():
        design = pm.Data("X", x_matrix)
        beta = pm.Normal("beta", shape=2)
        pm.Bernoulli("y", logit_p=pm.Normal("alpha") + design @ beta, observed=OUTCOME)

    model, link = _link(
        build,
        data_bounds={"X": ([-1, 0], [1, 1])},
        covariate_bins={"X": [5, "levels"]},
    )
    assert link.structure.label_sizes == (5, 2)
    point = {"alpha": -0.2, "beta": np.array([0.8, 1.5])}
    args = [model[k] for k in point]
    cell_p = pytensor.function(args, link.structure.parameters["probability"])(*point.values())
    # the indicator is exact: cell (b, 1) minus cell (b, 0) in log-odds is 1.5 where the
    # bin average of a nearly linear σ is close to σ at the centre
    centres = -1.0 + 0.4 * (np.arange(5) + 0.5)
    for b in range(5):
        for level in (0, 1):
            exact = integrate.quad(
                lambda x, lv=level: special.expit(-0.2 + 0.8 * x + 1.5 * lv),
                centres[b] - 0.2,
                centres[b] + 0.2,
            )[0]
            assert cell_p[b * 2 + level] == pytest.approx(exact / 0.4, abs=1e-6)


def test_an_integer_covariate_is_read_at_its_levels_by_default():
    def build():
        count = pm.Data("k", D)
        pm.Bernoulli("y", logit_p=pm.Normal("a") + pm.Normal("b") * count, observed=OUTCOME)

    _, link = _link(build, data_bounds={"k": (0, 1)})
    assert link.structure.label_sizes == (2,)
    assert link.structure.describe_bounds() == "y in [0, 1]; k [0, 1] in 2 levels"


def test_a_poisson_regression_is_read_per_bin():
    def build():
        xd = pm.Data("x", X)
        pm.Poisson("y", mu=pm.math.exp(pm.Normal("a") + pm.Normal("b") * xd), observed=COUNTS)

    model, link = _link(build, data_bounds={"y": (0, 5), "x": (-1, 1)})
    structure = link.structure
    assert structure.family.name == "poisson" and structure.label_sizes == (10,)
    rate = pytensor.function([model["a"], model["b"]], structure.parameters["rate"])(0.1, 0.9)
    edges = np.linspace(-1, 1, 11)
    exact = [
        integrate.quad(lambda x: np.exp(0.1 + 0.9 * x), lo, hi)[0] / 0.2
        for lo, hi in itertools.pairwise(edges)
    ]
    # two-node Gauss–Legendre: relative error ≤ w⁴ b⁴ e^{b w} / 4320 ≈ 5e-7 (w = 0.2, b = 0.9)
    np.testing.assert_allclose(rate, exact, rtol=0.2**4 * 0.9**4 * np.exp(0.18) / 4320)
    table = link.statistics()
    bin_of = np.minimum(((X + 1.0) / 0.2).astype(int), 9)
    np.testing.assert_array_equal(table[:, 0], np.bincount(bin_of, minlength=10))


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_stated_sensitivity_holds_when_a_record_moves_between_bins(neighbouring):
    """Every neighbouring pair of 2 records over (outcome, group, covariate) in a small
    domain (covariates at and between the bin edges): the table moves by at most the stated
    L1 and L2 sensitivity, and by exactly that for some pair."""
    _, link = _link(_logistic(), data_bounds={"x": (-1, 1)}, covariate_bins={"x": 2})
    structure = link.structure
    domain = list(itertools.product(range(2), range(2), (-1.0, -0.2, 0.0, 1.0)))

    def table(records):
        y = np.array([r[0] for r in records])
        g = np.array([r[1] for r in records])
        x = np.array([[r[2]] for r in records])
        return structure.family.statistics(BoundedLink(structure, y, covariates=x, groups=g))

    l1 = l2 = 0.0
    for base in itertools.combinations_with_replacement(domain, 2):
        t0 = table(list(base))
        if neighbouring == "replace-one":
            others = [[*base[:i], r, *base[i + 1 :]] for i in range(2) for r in domain]
        else:
            others = [[*base, r] for r in domain]
        for other in others:
            diff = (table(other) - t0).ravel()
            l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
    family = structure.family
    assert family.sensitivity(structure, neighbouring) == pytest.approx(l1, rel=1e-12)
    assert family.l2_sensitivity(structure, neighbouring) == pytest.approx(l2, rel=1e-12)


def test_the_release_is_charged_once_and_the_ledger_names_the_bins():
    _, link = _link(_logistic(), data_bounds={"x": (-1, 1)}, covariate_bins={"x": 4})
    ledger = PrivacyLedger()
    release = release_bounded(
        link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(0)
    )
    event = ledger.events[-1]
    assert (event.sensitivity, event.noise_scale) == (2.0, 2.0)
    assert event.statistic.endswith("; cells by covariate bins: x [-1, 1] in 4 bins")
    assert event.variables == ("y", "x", "g")  # the records, the binned covariate, the labels
    assert release.noisy.shape == (12, 2)


# --- refusals: before any noise, nothing charged ---------------------------------------------


def _refused(build, error, match, **options):
    ledger = PrivacyLedger()
    with pm.Model():
        build()
        with pytest.raises(error, match=match) as refused:
            pymc_dp.sample(
                10, epsilon=1.0, ledger=ledger, chains=1, tune=5, progressbar=False, **options
            )
    assert len(ledger) == 0
    return str(refused.value)


def test_covariates_without_bounds_are_refused_naming_the_bound():
    _refused(_logistic(), NonPrivateModelError, r"data_bounds\['x'\] = \(low, high\) is missing")


def test_covariates_outside_their_bounds_are_counted_never_shown():
    outside = np.where(np.arange(N) < 3, 1.5, X)
    message = _refused(
        _logistic(x=outside),
        InvalidPrivateDataError,
        r"x: 3 covariate values outside the declared data_bounds",
        data_bounds={"x": (-1, 1)},
    )
    assert "1.5" not in message


def test_non_finite_covariates_are_refused_even_with_clamping():
    missing = np.where(np.arange(N) < 2, np.inf, X)
    _refused(
        _logistic(x=missing),
        InvalidPrivateDataError,
        r"x: 2 covariate values are NaN or infinite",
        data_bounds={"x": (-1, 1)},
        clamp_to_bounds=True,
    )


def test_clamped_covariates_are_recorded_in_the_event():
    outside = np.where(np.arange(N) < 3, 1.5, X)
    _, link = _link(
        _logistic(x=outside),
        data_bounds={"x": (-1, 1)},
        clamp_to_bounds=["x"],
        covariate_bins={"x": 4},
    )
    assert link.structure.clamping() == "x to [-1, 1] per column"
    counts = link.statistics().reshape(3, 4, 2).sum(axis=(0, 2))
    bin_of = np.minimum(((np.clip(outside, -1, 1) + 1.0) / 0.5).astype(int), 3)
    np.testing.assert_array_equal(counts, np.bincount(bin_of, minlength=4))


def test_fractional_values_of_a_column_read_at_its_levels_are_refused():
    _refused(
        _logistic(),
        InvalidPrivateDataError,
        r"x: covariate levels",
        data_bounds={"x": (-1, 1)},
        covariate_bins={"x": "levels"},
    )


@pytest.mark.parametrize(
    ("bins", "match"),
    [
        (0, "an integer >= 1, 'levels'"),
        (2.5, "an integer >= 1, 'levels'"),
        (True, "an integer >= 1, 'levels'"),
        ([4, 4], "2 entries for 1 columns"),
        (5000, "more than 1000"),
    ],
)
def test_bad_bins_are_refused_naming_the_key(bins, match):
    message = _refused(
        _logistic(), ValueError, match, data_bounds={"x": (-1, 1)}, covariate_bins={"x": bins}
    )
    assert message.startswith("covariate_bins['x']")


def test_levels_need_whole_number_bounds_and_unused_bins_are_refused():
    _refused(
        _logistic(),
        ValueError,
        "whole-number data_bounds",
        data_bounds={"x": (-1, 1.5)},
        covariate_bins={"x": "levels"},
    )
    _refused(
        _logistic(),
        ValueError,
        r"covariate_bins names \['w'\]",
        data_bounds={"x": (-1, 1)},
        covariate_bins={"w": 4},
    )


def test_too_many_cells_or_evaluations_are_refused():
    matrix = RNG.uniform(-1, 1, (N, 6))

    def build():
        design = pm.Data("X", matrix)
        pm.Bernoulli("y", logit_p=design @ pm.Normal("beta", shape=6), observed=OUTCOME)

    _refused(build, NonPrivateModelError, "more than 100000", data_bounds={"X": (-1, 1)})
    _refused(
        build,
        NonPrivateModelError,
        "quadrature nodes per cell",
        data_bounds={"X": (-1, 1)},
        covariate_bins={"X": 6},  # 46,656 cells × 64 nodes
    )


def test_another_variable_reading_the_covariates_is_refused():
    def build():
        _logistic()()
        pm.Deterministic("x_mean", pt.mean(pm.modelcontext(None)["x"]))

    _refused(build, NonPrivateModelError, "'x_mean' reads pm.Data 'x'", data_bounds={"x": (-1, 1)})


def test_a_slice_of_a_covariate_matrix_is_refused():
    def build():
        design = pm.Data("X", np.column_stack([X, X]))
        pm.Bernoulli("y", logit_p=pm.Normal("b") * design[:, 0], observed=OUTCOME)

    _refused(build, NonPrivateModelError, "Subtensor", data_bounds={"X": (-1, 1)})


def test_covariate_bins_belong_to_the_laplace_statistics():
    _refused(
        _logistic(),
        ValueError,
        "covariate_bins is an option of the Laplace statistics",
        data_bounds={"x": (-1, 1)},
        covariate_bins={"x": 4},
        mechanism="ops",
    )


# --- end to end (integration) ------------------------------------------------------------


def _compare(build, data_bounds, n_draws=500, noise_seed=0):
    options = dict(draws=n_draws, tune=n_draws, chains=2, random_seed=1, progressbar=False)
    with build():
        private = pymc_dp.sample(
            epsilon=1.0,
            data_bounds=data_bounds,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(noise_seed),
            **options,
        )
    with build():
        exact = pm.sample(nuts_sampler="pymc", **options)
    return private, exact


def _moments(idata, name):
    draws = idata["posterior"][name]
    return draws.mean(("chain", "draw")).values, draws.std(("chain", "draw")).values


def _assert_near(private, exact, name):
    """The private posterior mean within four sds of where the release noise puts it.

    The release noise is seeded (NumPy backend, ``noise_seed``), so the test is deterministic;
    over seeds the gap between the private and the non-private means is random (an unseeded
    OpenDP release failed this bound in one CI run of many: gap 1.36 non-private sds where
    the bound allowed 1.24). With both posteriors near Gaussian, the noise-aware mean
    given the released table moves from the non-private mean by a spread of
    √(s_dp² − s_np²) (the variance the noise adds, by the law of total variance); each
    mean also carries Monte Carlo error s/√ESS (ESS ≥ 250 of 1,000 draws here). 0.2 s_np
    allows for binning the covariate (a bias, not noise).
    """
    (m_dp, s_dp), (m_np, s_np) = _moments(private, name), _moments(exact, name)
    spread = np.sqrt(max(s_dp**2 - s_np**2, 0.0) + (s_dp**2 + s_np**2) / 250)
    assert abs(m_dp - m_np) < 4 * spread + 0.2 * s_np, (m_dp, s_dp, m_np, s_np)
    return s_dp / s_np


@pytest.mark.integration
def test_private_logistic_regression_with_varying_intercepts_is_near_the_non_private_fit():
    """n = 4,000, 4 groups, x on [−1, 1] in 10 bins, ε = 1: the slope's posterior mean where
    the noise puts it (`_assert_near`), its sd within 30% of the non-private sd."""
    rng = np.random.default_rng(5)
    n = 4000
    x, g = rng.uniform(-1, 1, n), rng.integers(0, 4, n)
    y = rng.binomial(1, special.expit(-0.3 + 1.2 * x + 0.6 * (g - 1.5)))

    def build():
        model = pm.Model()
        with model:
            xd, gd = pm.Data("x", x), pm.Data("g", g)
            alpha, beta = pm.Normal("alpha", 0, 2), pm.Normal("beta", 0, 2)
            z = pm.Normal("z", 0, 1, shape=4)
            pm.Bernoulli("y", logit_p=alpha + z[gd] + beta * xd, observed=y)
        return model

    private, exact = _compare(build, {"x": (-1, 1)})
    assert 0.95 < _assert_near(private, exact, "beta") < 1.3
    ledger = pymc_dp.PrivacyLedger.from_datatree(private)
    assert [e.variables for e in ledger.events] == [("y", "x", "g")] and ledger.epsilon == 1.0
    assert "observed_data" not in private.children and "constant_data" not in private.children
    assert int(private["sample_stats"]["diverging"].sum()) == 0


@pytest.mark.integration
def test_private_poisson_regression_is_near_the_non_private_fit():
    """n = 4,000 counts in [0, 10], x on [−1, 1] in 10 bins, ε = 1: the slope where the
    noise puts it (`_assert_near`); the private sd at most 5× (counts up to 10 per record:
    Σy's noise is 10× a Bernoulli's)."""
    rng = np.random.default_rng(6)
    n = 4000
    x = rng.uniform(-1, 1, n)
    y = np.minimum(rng.poisson(np.exp(0.5 + 0.8 * x)), 10)

    def build():
        model = pm.Model()
        with model:
            xd = pm.Data("x", x)
            alpha, beta = pm.Normal("alpha", 0, 2), pm.Normal("beta", 0, 2)
            pm.Poisson("y", mu=pm.math.exp(alpha + beta * xd), observed=y)
        return model

    private, exact = _compare(build, {"x": (-1, 1), "y": (0, 10)})
    assert 1.0 < _assert_near(private, exact, "beta") < 5.0
    assert int(private["sample_stats"]["diverging"].sum()) == 0


# --- the adversarial review's findings ----------------------------------------------------


@pytest.mark.parametrize(
    "form", ["switch", "comparison", "floor"], ids=["switch", "comparison", "floor"]
)
def test_a_discontinuous_function_of_a_binned_covariate_is_refused(form):
    def build():
        xd = pm.Data("x", X)
        b = pm.Normal("b")
        if form == "switch":
            logit = pm.math.switch(xd > 0.05, b, -b)
        elif form == "comparison":
            logit = b * (xd > 0.05)
        else:
            logit = b * pt.floor(3 * xd)
        pm.Bernoulli("y", logit_p=logit, observed=OUTCOME)

    _refused(build, NonPrivateModelError, "a discontinuous function", data_bounds={"x": (-1, 1)})


def test_a_switch_on_an_indicator_read_at_its_levels_is_exact_and_accepted():
    def build():
        d = pm.Data("d", D)
        b = pm.Normal("b")
        pm.Bernoulli("y", logit_p=pm.math.switch(pt.gt(d, 0), b, -b), observed=OUTCOME)

    model, link = _link(build, data_bounds={"d": (0, 1)})
    p = pytensor.function([model["b"]], link.structure.parameters["probability"])(0.7)
    np.testing.assert_allclose(p, special.expit([-0.7, 0.7]), rtol=1e-12)


def test_record_coordinates_on_a_covariate_dim_are_refused():
    """Found by the review: the dims of covariates index records as the observed's do."""

    def build():
        model = pm.modelcontext(None)
        model.add_coord("patient", [f"id-{v:.6f}" for v in X])  # built from the records
        xd = pm.Data("x", X, dims="patient")
        pm.Bernoulli("y", logit_p=pm.Normal("b") * xd, observed=OUTCOME)

    message = _refused(
        build,
        NonPrivateModelError,
        r"dim 'patient' indexes the records of 'y'",
        data_bounds={"x": (-1, 1)},
    )
    assert "id-" not in message


def test_a_cell_probability_of_exactly_one_has_the_laplace_density_of_its_release():
    """Found by the review: a mean of 0 (p = 1 exactly) gave −∞ instead of log Laplace(r; b)."""
    from pymc_dp.families.poisson import poisson_laplace_log_marginal

    value = poisson_laplace_log_marginal(
        pt.as_tensor(np.array([0.7, -3.0])),
        pt.as_tensor(np.zeros(2)),
        pt.as_tensor(np.float64(2.0)),
        None,
        None,
    ).eval()
    np.testing.assert_allclose(value, -np.abs([0.7, -3.0]) / 2.0 - np.log(4.0), rtol=1e-12)


def test_an_integer_covariate_with_fractional_bounds_is_told_how_to_bin_it():
    def build():
        k = pm.Data("k", D)
        pm.Bernoulli("y", logit_p=pm.Normal("b") * k, observed=OUTCOME)

    message = _refused(build, ValueError, "whole-number", data_bounds={"k": (0, 10.5)})
    assert "the default for an integer array" in message and "covariate_bins={'k': B}" in message


def test_latent_counts_start_inside_their_support_whatever_the_release():
    """Found in the Minneapolis notebook: empty cells release counts near or below 0, where
    the default start (the released count) is outside the latent counts' support, and the
    run failed after its release. The start survives PyMC's ±1 jitter of the offset."""
    from pymc_dp.families.bounded import record_count_initial_offset

    released = np.array([-7.3, -1.0, 0.0, 0.5, 2.9, 3.0, 250.0])
    for scale in (0.01, 2.0, 2000.0):
        offset = record_count_initial_offset(released, scale)
        for jitter in (-1.0, 0.0, 1.0):  # n = b · softplus(u + r/b)
            counts = scale * np.logaddexp(0.0, offset + jitter + released / scale)
            assert np.all(counts >= 1.0 - 1e-9)
    offset = record_count_initial_offset(released, 2.0)
    assert offset[-1] == 0.0  # a well-populated cell starts at its release, as before
    assert 2.0 * np.logaddexp(0.0, 250.0 / 2.0) == pytest.approx(250.0)


@pytest.mark.integration
def test_a_poisson_regression_with_empty_bins_starts_and_samples():
    """Covariates on [0, 1] declared on [−1, 1]: half the bins are empty and their released
    counts are noise around 0; every seed samples (was: 'Initial evaluation ... failed' after
    the charge for about half of them)."""
    x = RNG.uniform(0.0, 1.0, N)
    for seed in range(6):
        ledger = PrivacyLedger()
        with pm.Model():
            xd = pm.Data("x", x)
            rate = pm.math.exp(pm.Normal("a") + pm.Normal("b") * xd)
            pm.Poisson("y", mu=rate, observed=COUNTS)
            idata = pymc_dp.sample(
                20,
                tune=20,
                chains=1,
                epsilon=1.0,
                ledger=ledger,
                data_bounds={"x": (-1, 1), "y": (0, 5)},
                noise_rng=np.random.default_rng(seed),
                noise_backend="numpy",
                random_seed=seed,
                progressbar=False,
            )
        assert len(ledger) == 1 and idata["posterior"]["b"].size == 20
