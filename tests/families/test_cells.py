"""Count likelihoods with any link over group labels (pymc_dp.families.cells).

Recognition on the graph, the per-cell table, its sensitivity against every neighbouring pair
of a small domain, the Poisson device's likelihood against the multinomial in closed form,
refusals before any charge, and (integration) a private varying-intercept logistic model
against its non-private fit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.graph.cells import MAX_CELLS
from pymc_dp.mechanisms.statistics import release_bounded

RNG = np.random.default_rng(7)
N = 60
G1 = RNG.integers(0, 3, N)
G2 = RNG.integers(0, 2, N)
OUTCOME = RNG.integers(0, 2, N)


def _link(build):
    with pm.Model() as model:
        build()
    public = ["u"] if "u" in model.named_vars else []  # group-level predictors: declared public
    return recognise(model, "laplace", public=public).blocks["y"]


def _varying_intercept():
    g = pm.Data("g", G1)
    mu, tau = pm.Normal("mu"), pm.HalfNormal("tau")
    z = pm.Normal("z", shape=3)
    pm.Bernoulli("y", logit_p=mu + tau * z[g], observed=OUTCOME)


def _two_factors():
    g, h = pm.Data("g", G1), pm.Data("h", G2)
    a, b = pm.Normal("a", shape=3), pm.Normal("b", shape=2)
    pm.Bernoulli("y", logit_p=a[g] + b[h], observed=OUTCOME)


def _group_predictors():
    g = pm.Data("g", G1)
    u = pm.Data("u", np.array([[0.0, 1.0], [1.0, 0.5], [2.0, -1.0]]))  # public, per group
    gamma, z = pm.Normal("gamma", shape=2), pm.Normal("z", shape=3)
    pm.Bernoulli("y", logit_p=z[g] + u[g] @ gamma, observed=OUTCOME)


def _categorical():
    g = pm.Data("g", G1)
    eta = pm.Normal("eta", shape=(3, 3))
    pm.Categorical("y", p=pm.math.softmax(eta[g], axis=-1), observed=RNG.integers(0, 3, N))


def _binomial():
    g = pm.Data("g", G1)
    z = pm.Normal("z", shape=3)
    pm.Binomial("y", n=4, logit_p=z[g], observed=RNG.integers(0, 5, N))


@pytest.mark.parametrize(
    ("build", "cells", "sizes", "categories"),
    [
        (_varying_intercept, 3, (3,), 2),
        (_two_factors, 6, (3, 2), 2),
        (_group_predictors, 3, (3,), 2),
        (_categorical, 3, (3,), 3),
        (_binomial, 3, (3,), 2),
    ],
    ids=["varying-intercept", "two-factors", "group-predictors", "categorical", "binomial"],
)
def test_graphs_read_through_labels_are_recognised_per_cell(build, cells, sizes, categories):
    link = _link(build)
    structure = link.structure
    assert structure.family.name == "cell-counts"
    assert (structure.n_groups, structure.label_sizes) == (cells, sizes)
    assert structure.n_categories == categories
    # the per-cell parameter has one row per cell and reads no record, no label
    graph = structure.parameters["probability"]
    inputs = {v.name for v in pytensor.graph.traversal.graph_inputs([graph]) if v.name}
    assert not inputs & {"g", "h", "y"}


def test_the_cell_parameter_is_the_record_parameter_of_every_record_in_the_cell():
    """The rewrite is exact: evaluated at a point, cell c's probability equals the model's
    probability of each record whose labels fall in c."""
    with pm.Model() as model:
        _two_factors()
    structure = recognise(model, "laplace").blocks["y"].structure
    point = {"a": np.array([0.3, -1.0, 2.0]), "b": np.array([0.5, -0.25])}
    a, b = model["a"], model["b"]
    cell_p = pytensor.function([a, b], structure.parameters["probability"])(*point.values())
    rv = model["y"]
    record_p = pytensor.function([a, b], rv.owner.op.dist_params(rv.owner)[-1])(*point.values())
    cells = np.ravel_multi_index((G1, G2), (3, 2))
    np.testing.assert_allclose(cell_p.reshape(-1)[cells], record_p.reshape(-1), rtol=1e-12)


def test_statistics_are_the_counts_per_cell_and_outcome():
    link = _link(_two_factors)
    table = link.statistics()
    cells = np.ravel_multi_index((G1, G2), (3, 2))
    expected = np.zeros((6, 2))
    np.add.at(expected, (cells, OUTCOME), 1.0)
    np.testing.assert_array_equal(table, expected)
    assert table.sum() == N


def _brute_force(structure, n_records, outcomes, neighbouring):
    """Largest L1 and L2 change of the table over neighbouring data sets of a small domain."""
    family = structure.family
    sizes = structure.label_sizes
    domain = [(y, *labels) for y in outcomes for labels in itertools.product(*map(range, sizes))]

    def table(records):
        y = np.array([r[0] for r in records])
        labels = np.array([r[1:] for r in records])
        return family.statistics(BoundedLink(structure, y, groups=labels))

    l1 = l2 = 0.0
    for base in itertools.combinations_with_replacement(domain, n_records):
        t0 = table(list(base))
        if neighbouring == "replace-one":
            for i, record in itertools.product(range(n_records), domain):
                moved = list(base)
                moved[i] = record
                diff = (table(moved) - t0).ravel()
                l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
        else:
            for record in domain:
                diff = (table([*base, record]) - t0).ravel()
                l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
    return l1, l2


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
@pytest.mark.parametrize(
    ("build", "outcomes"),
    [(_two_factors, range(2)), (_categorical, range(3)), (_binomial, range(5))],
    ids=["bernoulli", "categorical", "binomial"],
)
def test_stated_sensitivity_is_the_largest_change_over_neighbours(build, outcomes, neighbouring):
    structure = _link(build).structure
    l1, l2 = _brute_force(structure, 2, outcomes, neighbouring)
    family = structure.family
    assert family.sensitivity(structure, neighbouring) == pytest.approx(l1, rel=1e-12)
    assert family.l2_sensitivity(structure, neighbouring) == pytest.approx(l2, rel=1e-12)


def test_the_poisson_device_gives_the_multinomial_likelihood_of_the_probabilities():
    """With almost no noise, the noise-aware density of one cell's release, integrated over
    the cell size's flat prior, is ∝ p^s (1 − p)^f: the Bernoulli likelihood (Baker 1994)."""
    with pm.Model() as model:
        _varying_intercept()
    structure = recognise(model, "laplace").blocks["y"].structure
    family = structure.family
    failures, successes = 23.0, 12.0
    released = pt.as_tensor(np.array([[failures, successes]] * 3))
    p = pt.dvector("p")
    with pm.Model() as private:
        loglik = family.noise_aware_log_likelihood(
            {"probability": p}, released, pt.as_tensor(1e-3), None, structure, "replace-one"
        )
    log_ratio = private["y_cell_log_size"]
    f = pytensor.function([p, log_ratio], loglik)
    grid = np.linspace(-6.0, 3.0, 4001)  # log μ − log 35
    step = grid[1] - grid[0]
    values = []
    for q in (0.2, 0.35, 0.5, 0.7):
        dens = [f(np.full(3, q), np.full(3, x)) / 3.0 for x in grid]
        values.append(np.log(np.sum(np.exp(np.array(dens) - 50.0)) * step) + 50.0)
    expected = [successes * math.log(q) + failures * math.log1p(-q) for q in (0.2, 0.35, 0.5, 0.7)]
    np.testing.assert_allclose(np.diff(values), np.diff(expected), atol=1e-6)


def test_the_release_is_charged_with_the_stated_sensitivity_and_the_sampler_reads_its_scale():
    with pm.Model() as model:
        _varying_intercept()
    link = recognise(model, "laplace").blocks["y"]
    ledger = PrivacyLedger()
    release = release_bounded(
        link, 0.5, ledger=ledger, backend="numpy", rng=np.random.default_rng(0)
    )
    event = ledger.events[-1]
    assert (event.sensitivity, event.epsilon, event.noise_scale) == (2.0, 0.5, 4.0)
    assert release.noisy.shape == (3, 2) and release.public_n is None
    private = pymc_dp.build_private_model(model, [release], inference="noise-aware")
    assert float(private["y_noise_scale"].get_value()) == 4.0
    np.testing.assert_array_equal(private["y_released_statistics"].get_value(), release.noisy)


# --- refusals: before any noise, nothing charged ---------------------------------------------


def _refused(build, error, match):
    ledger = PrivacyLedger()
    with pm.Model():
        build()
        with pytest.raises(error, match=match):
            pymc_dp.sample(10, epsilon=1.0, ledger=ledger, chains=1, tune=5, progressbar=False)
    assert len(ledger) == 0


def test_labels_out_of_range_are_counted_never_shown():
    def build():
        g = pm.Data("g", np.where(np.arange(N) < 4, 7, G1))
        z = pm.Normal("z", shape=3)
        pm.Bernoulli("y", logit_p=z[g], observed=OUTCOME)

    _refused(build, InvalidPrivateDataError, r"y: 4 group labels outside the declared domain")


def test_outcomes_outside_the_domain_are_refused():
    def build():
        g = pm.Data("g", G1)
        z = pm.Normal("z", shape=3)
        pm.Bernoulli("y", logit_p=z[g], observed=np.where(np.arange(N) < 2, 2, OUTCOME))

    _refused(build, InvalidPrivateDataError, r"y: 2 values outside")


@pytest.mark.parametrize(
    ("form", "match"),
    [
        ("covariate", r"covariates 'x'.*data_bounds\['x'\] = \(low, high\) is missing"),
        ("computed-labels", "group labels"),
        ("record-sum", "not a function of group-level quantities"),
    ],
)
def test_other_graphs_are_refused_naming_what_was_found(form, match):
    def build():
        g = pm.Data("g", G1)
        x = pm.Data("x", RNG.normal(size=N))
        z = pm.Normal("z", shape=3)
        if form == "covariate":
            logit = z[g] + x  # a per-record covariate without declared bounds
        elif form == "computed-labels":
            logit = z[g + 0]
        else:
            logit = z[g] - pt.sum(z[g])
        pm.Bernoulli("y", logit_p=logit, observed=OUTCOME)

    _refused(build, NonPrivateModelError, match)


def test_too_many_cells_are_refused():
    def build():
        g = pm.Data("g", G1)
        big = pm.Normal("big", shape=MAX_CELLS + 1)
        pm.Bernoulli("y", logit_p=big[g], observed=OUTCOME)

    _refused(build, NonPrivateModelError, f"more than {MAX_CELLS}")


def test_binomial_with_per_record_trials_is_refused():
    def build():
        g = pm.Data("g", G1)
        z = pm.Normal("z", shape=3)
        pm.Binomial("y", n=np.full(N, 3), logit_p=z[g], observed=RNG.integers(0, 4, N))

    _refused(build, NonPrivateModelError, "one public number of trials")


# --- end to end ---------------------------------------------------------------------------------


@pytest.mark.integration
def test_varying_intercept_logistic_private_posterior_is_near_the_non_private_one():
    """n = 4,000 records in 8 groups, ε = 1: per-group log-odds within 0.15 of the
    non-private posterior means, sds within 25% of theirs, and a ledger of one event. The
    release noise is seeded (NumPy backend): unseeded OpenDP noise made the divergence count
    random (one divergence in 1,000 draws in one run of many)."""
    rng = np.random.default_rng(1)
    groups, n = 8, 4000
    g = rng.integers(0, groups, n)
    z_true = rng.normal(size=groups)
    y = rng.binomial(1, stats.logistic.cdf(-0.5 + 0.8 * z_true)[g])

    def model():
        with pm.Model() as m:
            labels = pm.Data("g", g)
            mu, tau = pm.Normal("mu", 0, 1.5), pm.HalfNormal("tau", 1)
            z = pm.Normal("z", shape=groups)
            pm.Bernoulli("y", logit_p=mu + tau * z[labels], observed=y)
        return m

    options = dict(draws=500, tune=500, chains=2, random_seed=1, progressbar=False)
    with model():
        private = pymc_dp.sample(
            epsilon=1.0, noise_backend="numpy", noise_rng=np.random.default_rng(0), **options
        )
    with model():
        exact = pm.sample(nuts_sampler="pymc", **options)

    def log_odds(idata):
        post = idata["posterior"]
        theta = post["mu"] + post["tau"] * post["z"]
        return theta.mean(("chain", "draw")).values, theta.std(("chain", "draw")).values

    (m_dp, s_dp), (m_np, s_np) = log_odds(private), log_odds(exact)
    np.testing.assert_allclose(m_dp, m_np, atol=0.15)
    np.testing.assert_allclose(s_dp / s_np, 1.0, atol=0.25)
    ledger = pymc_dp.PrivacyLedger.from_datatree(private)
    assert [e.mechanism for e in ledger.events] == ["laplace"] and ledger.epsilon == 1.0
    assert "observed_data" not in private.children
    assert int(private["sample_stats"]["diverging"].sum()) == 0


def test_group_level_predictors_are_private_until_declared_public():
    with pm.Model() as model:
        _group_predictors()
    with pytest.raises(NonPrivateModelError, match=r"'y' reads pm.Data 'u' \(shape \(3, 2\)\)"):
        recognise(model, "laplace")
    assert recognise(model, "laplace", public=["u"]).blocks["y"].structure.n_groups == 3


# --- Poisson rates read per cell ----------------------------------------------------------------

COUNTS = RNG.integers(0, 6, N)


def _poisson_two_factors():
    g, h = pm.Data("g", G1), pm.Data("h", G2)
    a, b = pm.Normal("a", shape=3), pm.Normal("b", shape=2)
    pm.Poisson("y", mu=pm.math.exp(a[g] + b[h]), observed=COUNTS)


def _poisson_link(build=_poisson_two_factors, neighbouring="replace-one"):
    with pm.Model() as model:
        build()
    return recognise(model, "laplace", data_bounds={"y": (0, 5)}, neighbouring=neighbouring).blocks[
        "y"
    ]


def test_a_log_linear_poisson_rate_is_read_per_cell():
    link = _poisson_link()
    structure = link.structure
    assert structure.family.name == "poisson"
    assert (structure.n_groups, structure.label_sizes, structure.grouped) == (6, (3, 2), True)
    cells = np.ravel_multi_index((G1, G2), (3, 2))
    expected = np.zeros((6, 2))
    np.add.at(expected, cells, np.column_stack([np.ones(N), COUNTS / 5.0]))
    np.testing.assert_allclose(link.statistics(), expected)
    point = {"a": np.array([0.3, -1.0, 2.0]), "b": np.array([0.5, -0.25])}
    with pm.Model() as model:
        _poisson_two_factors()
    structure = recognise(model, "laplace", data_bounds={"y": (0, 5)}).blocks["y"].structure
    rates = pytensor.function([model["a"], model["b"]], structure.parameters["rate"])
    np.testing.assert_allclose(
        rates(*point.values()), np.exp(point["a"][:, None] + point["b"][None, :]).ravel()
    )


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_poisson_cells_sensitivity_is_the_largest_change_over_neighbours(neighbouring):
    structure = _poisson_link(neighbouring=neighbouring).structure
    family = structure.family
    sizes = structure.label_sizes
    domain = [(y, *labels) for y in (0, 5) for labels in itertools.product(*map(range, sizes))]

    def table(records):
        y = np.array([r[0] for r in records])
        labels = np.array([r[1:] for r in records])
        full = family.statistics(BoundedLink(structure, y, groups=labels))
        return full[:, family.released_components(structure, neighbouring)]

    worst = 0.0
    for base in itertools.combinations_with_replacement(domain, 2):
        t0 = table(list(base))
        if neighbouring == "replace-one":
            moves = [[*base[:i], record, *base[i + 1 :]] for i in range(2) for record in domain]
        else:
            moves = [[*base, record] for record in domain]
        for moved in moves:
            worst = max(worst, np.abs(table(moved) - t0).sum())
    assert family.sensitivity(structure, neighbouring) == pytest.approx(worst)


def test_a_label_out_of_range_for_its_own_array_is_refused_even_if_its_cell_exists():
    """g = 3 with G₁ = 3 would be cell 3·2 + h < 6 for h = 0 if labels were combined first."""

    def build():
        g = pm.Data("g", np.where(np.arange(N) == 0, 1, G1))
        h = pm.Data("h", np.where(np.arange(N) == 0, 2, G2))  # 1·2 + 2 = 4: a valid cell
        a, b = pm.Normal("a", shape=3), pm.Normal("b", shape=2)
        pm.Poisson("y", mu=pm.math.exp(a[g] + b[h]), observed=COUNTS)

    ledger = PrivacyLedger()
    with pm.Model():
        build()
        with pytest.raises(InvalidPrivateDataError, match=r"y: 1 group labels outside"):
            pymc_dp.sample(10, epsilon=1.0, data_bounds={"y": (0, 5)}, ledger=ledger)
    assert len(ledger) == 0


def test_a_poisson_rate_with_a_per_record_covariate_needs_its_bounds():
    with pm.Model() as model:
        g = pm.Data("g", G1)
        x = pm.Data("x", RNG.uniform(-1, 1, size=N))
        a, beta = pm.Normal("a", shape=3), pm.Normal("beta")
        pm.Poisson("y", mu=pm.math.exp(a[g] + beta * x), observed=COUNTS)
    with pytest.raises(
        NonPrivateModelError, match=r"data_bounds\['x'\] = \(low, high\) is missing"
    ):
        recognise(model, "laplace", data_bounds={"y": (0, 5)})
    link = recognise(model, "laplace", data_bounds={"y": (0, 5), "x": (-1, 1)}).blocks["y"]
    assert link.structure.label_sizes == (3, 10) and link.structure.n_groups == 30


# --- the adversarial review's findings (each refused before any charge, or now accepted) -------


def _charged_nothing(build, match):
    ledger = PrivacyLedger(budget=10)
    with pm.Model():
        build()
        with pytest.raises(NonPrivateModelError, match=match):
            pymc_dp.sample(20, epsilon=1.0, ledger=ledger, chains=1, tune=20, progressbar=False)
    assert len(ledger) == 0


def test_an_index_computed_from_a_private_array_is_refused():
    """Was accepted as one cell: P[sum(records)] put the exact sum into the posterior."""

    def build():
        copy = OUTCOME.reshape(1, -1).copy()
        index = pt.as_tensor(copy).sum().astype("int64")[None]
        z = pm.Normal("z", shape=N + 1)
        pm.Bernoulli("y", p=pm.math.invlogit(z)[index], observed=OUTCOME)

    _charged_nothing(build, "an index computed from data arrays")


@pytest.mark.parametrize("form", ["per-record-effect", "per-record-probability"])
def test_a_parameter_per_record_without_labels_is_refused(form):
    """Was charged, then failed in the sampler (a reshape of 60 values into one cell)."""

    def build():
        if form == "per-record-effect":
            logit = pm.Normal("mu") + pm.Normal("e", shape=N)
            pm.Bernoulli("y", logit_p=logit, observed=OUTCOME)
        else:
            pm.Bernoulli("y", p=pm.Uniform("p", 0, 1, shape=N), observed=OUTCOME)

    _charged_nothing(build, "varies by record but reads no group labels")


def test_a_private_index_that_is_not_a_label_is_refused_as_a_private_read():
    """Was charged, then failed building the private model."""

    def build():
        s = pm.Data("s", np.array([1]))
        z = pm.Normal("z", shape=2)
        pm.Bernoulli("y", p=pm.math.invlogit(z)[s], observed=OUTCOME)

    _charged_nothing(build, r"'y' reads pm.Data 's' \(shape \(1,\)\)")


@pytest.mark.parametrize("trials", [0, 10**12])
def test_binomial_trials_outside_the_supported_range_are_refused(trials):
    """10¹² trials was charged, then ran out of memory; 0 named no variable."""

    def build():
        g = pm.Data("g", G1)
        z = pm.Normal("z", shape=3)
        pm.Binomial("y", n=trials, logit_p=z[g], observed=np.zeros(N, int))

    _charged_nothing(build, r"y: a Binomial read per cell needs between 1 and 10,000 trials")


@pytest.mark.parametrize("n_groups", [3, N], ids=["3-groups", "as-many-groups-as-records"])
def test_numpy_labels_are_read_like_data_containers(n_groups):
    """Raised a TypeError from PyTensor (a constant's static shape is the records')."""
    labels = np.arange(N) % n_groups
    with pm.Model() as model:
        z = pm.Normal("z", shape=n_groups)
        pm.Bernoulli("y", logit_p=z[labels], observed=OUTCOME)
    link = recognise(model, "laplace").blocks["y"]
    expected = np.zeros((n_groups, 2))
    np.add.at(expected, (labels, OUTCOME), 1.0)
    np.testing.assert_array_equal(link.statistics(), expected)
    assert link.structure.parameters["probability"].type.shape == (n_groups,)


def test_a_reduction_over_records_is_named():
    def build():
        g = pm.Data("g", G1)
        a = pm.Normal("a", shape=3)
        pm.Bernoulli("y", logit_p=a[g] - a[g].mean(), observed=OUTCOME)

    _charged_nothing(build, r"a reduction over the records")


def _records_as_their_own_labels(form):
    rng = np.random.default_rng(4)
    counts = rng.poisson(2.0, 50)
    outcome = rng.integers(0, 2, 50)
    labels = np.arange(50) % 3
    with pm.Model() as model:
        if form == "poisson rate indexed by its counts":
            cd = pm.Data("cd", counts)
            pm.Poisson("y", pm.Gamma("lam", 2, 1, shape=20)[cd], observed=cd)
            return model, {"cd": (0, 19)}
        yd = pm.Data("yd", outcome)
        g = pm.Data("g", labels)
        if form == "logistic labels that are its outcomes":
            a, b = pm.Normal("a", shape=2), pm.Normal("b", shape=3)
            pm.Bernoulli("y", logit_p=a[yd] + b[g], observed=yd)
            return model, {}
        a = pm.Normal("a", shape=3)
        pm.Bernoulli("y", logit_p=a[g] + pm.Normal("b") * yd, observed=yd)
        return model, {"yd": (0, 1)}


@pytest.mark.parametrize(
    "form",
    [
        "poisson rate indexed by its counts",
        "logistic labels that are its outcomes",
        "logistic covariate that is its outcome",
    ],
)
def test_records_used_as_their_own_labels_or_covariates_are_refused_before_the_charge(form):
    """Adversarial review (2026-12-07): accepted before (the labels and covariates are part of
    the record, so the sensitivity held, but the model reads its own outcome as a predictor,
    and without bounds the message asked for data_bounds on the records); the Normal already
    refused it. Now every family refuses it, naming the reason, with nothing charged."""
    model, bounds = _records_as_their_own_labels(form)
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="reads the likelihood's own records"):
        pymc_dp.sample(5, model=model, epsilon=1.0, data_bounds=bounds, ledger=ledger)
    assert len(ledger) == 0
