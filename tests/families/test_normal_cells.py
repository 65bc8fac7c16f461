"""Group means: a Normal whose mean is read per cell of private group labels (issue 23).

``pm.Normal("y", mu=theta[g], sigma=s)``, ``mu + tau * z[g]``, ``a[g1] + b[g2]``: the
per-cell (n_c, Σw_c, Σw²_c) of :class:`pymc_dp.families.normal.NormalFamily`, their
sensitivities against brute force, the plug-in likelihood against the records' exact
log-likelihood, the noise-aware likelihood against the one-group density, the release and its
ledger event, refusals; end-to-end sampling in the integration tier."""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.families.normal import CELL_SHARES
from pymc_dp.families.second_moments import ROUND_UP, two_component_laplace_log_likelihood
from pymc_dp.mechanisms.statistics import release_bounded

BOUNDS = (-4.0, 6.0)
RNG = np.random.default_rng(3)
G = RNG.integers(0, 3, 60)
H = RNG.integers(0, 2, 60)
Y = np.clip(RNG.normal(1.0 + G - H, 1.0), *BOUNDS)


def _group_means(kind="index", y=Y, g=G, h=H):
    def build():
        labels = pm.Data("g", g)
        sigma = pm.HalfNormal("sigma", 2.0)
        if kind == "index":
            mu = pm.Normal("theta", 0.0, 3.0, shape=3)[labels]
        elif kind == "non-centred":
            centre, tau = pm.Normal("mu", 0.0, 3.0), pm.HalfNormal("tau", 1.0)
            z = pm.Normal("z", 0.0, 1.0, shape=3)
            mu = (centre + tau * z)[labels]
        elif kind == "two-labels":
            a, b = pm.Normal("a", 0.0, 3.0, shape=3), pm.Normal("b", 0.0, 1.0, shape=2)
            mu = a[labels] + b[pm.Data("h", h)]
        else:
            raise AssertionError(kind)
        pm.Normal("y", mu=mu, sigma=sigma, observed=y)

    return build


def _link(build, **options):
    with pm.Model() as model:
        build()
    options.setdefault("data_bounds", {"y": BOUNDS})
    return model, recognise(model, "laplace", **options).blocks["y"]


@pytest.mark.parametrize(
    ("kind", "sizes"), [("index", (3,)), ("non-centred", (3,)), ("two-labels", (3, 2))]
)
def test_group_means_are_read_per_cell_of_their_labels(kind, sizes):
    _, link = _link(_group_means(kind))
    structure = link.structure
    assert structure.family.name == "normal" and structure.grouped
    assert structure.label_sizes == sizes and structure.n_groups == int(np.prod(sizes))
    graph = structure.parameters["mu"]
    inputs = {v.name for v in pytensor.graph.traversal.graph_inputs([graph]) if v.name}
    assert not inputs & {"g", "h", "y"}  # the cell graph reads no label and no record


def test_statistics_are_count_sum_and_sum_of_squares_per_cell():
    _, link = _link(_group_means("two-labels"))
    table = link.statistics()
    w = (Y - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0]) - 0.5
    cell = G * 2 + H
    for c in range(6):
        inside = w[cell == c]
        assert table[c] == pytest.approx([inside.size, inside.sum(), (inside**2).sum()])


def _weighted_table(structure, values, labels, neighbouring):
    link = BoundedLink(structure, np.asarray(values, dtype=float), groups=np.asarray(labels))
    weights = structure.family.weights(structure, neighbouring)
    return structure.family.statistics(link) * weights


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_stated_sensitivity_holds_and_is_reached_when_a_record_changes_cell(neighbouring):
    """Every neighbouring pair of 2 records over (value, group) in a small domain (the bounds,
    the midpoint, a quarter): the weighted table moves by at most the stated L1 and L2
    sensitivity, and by exactly the L1 for some pair (a record at a bound changing cell)."""
    _, link = _link(_group_means("index"))
    structure = link.structure
    family = structure.family
    domain = list(itertools.product((-4.0, -1.5, 1.0, 6.0), range(3)))
    l1 = l2 = 0.0
    for base in itertools.combinations_with_replacement(domain, 2):
        t0 = _weighted_table(structure, [r[0] for r in base], [r[1] for r in base], neighbouring)
        if neighbouring == "replace-one":
            others = [[*base[:i], r, *base[i + 1 :]] for i in range(2) for r in domain]
        else:
            others = [[*base, r] for r in domain]
        for other in others:
            t1 = _weighted_table(
                structure, [r[0] for r in other], [r[1] for r in other], neighbouring
            )
            diff = (t1 - t0).ravel()
            l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
    stated = family.sensitivity(structure, neighbouring)
    assert stated == pytest.approx(l1 * ROUND_UP, rel=1e-12)
    assert stated == pytest.approx((2.0 if neighbouring == "replace-one" else 1.0) * ROUND_UP)
    assert l2 <= family.l2_sensitivity(structure, neighbouring)
    if neighbouring == "add-remove-one":
        assert family.l2_sensitivity(structure, neighbouring) == pytest.approx(
            np.sqrt(np.sum(CELL_SHARES**2)) * ROUND_UP
        )


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-4.0, 6.0), min_size=1, max_size=8),
    labels=st.lists(st.integers(0, 2), min_size=8, max_size=8),
    new_value=st.floats(-4.0, 6.0),
    new_label=st.integers(0, 2),
    which=st.integers(0, 7),
)
def test_no_replacement_moves_the_weighted_table_beyond_its_sensitivity(
    values, labels, new_value, new_label, which
):
    _, link = _link(_group_means("index"))
    structure = link.structure
    labels = labels[: len(values)]
    which = which % len(values)
    other_values, other_labels = list(values), list(labels)
    other_values[which], other_labels[which] = new_value, new_label
    diff = _weighted_table(structure, other_values, other_labels, "replace-one") - (
        _weighted_table(structure, values, labels, "replace-one")
    )
    family = structure.family
    assert np.abs(diff).sum() <= family.sensitivity(structure, "replace-one")
    assert np.sqrt((diff**2).sum()) <= family.l2_sensitivity(structure, "replace-one")


def test_the_plugin_likelihood_of_the_exact_table_is_the_records_log_likelihood():
    _, link = _link(_group_means("index"))
    structure = link.structure
    table = link.statistics()
    theta = np.array([0.3, 1.7, 2.2])
    sigma = 1.3
    loglik = structure.family.plugin_log_likelihood(
        {"mu": pt.as_tensor(theta), "sigma": pt.as_tensor(sigma)}, pt.as_tensor(table), structure
    )
    expected = stats.norm.logpdf(Y, theta[G], sigma).sum()
    assert float(loglik.eval()) == pytest.approx(expected, rel=1e-10)


def test_the_noise_aware_likelihood_is_the_one_group_density_cell_by_cell():
    """The vectorised two-component density over cells equals it evaluated one cell at a
    time (the one-group Normal's exact marginal), given the latent counts."""
    values = np.array([[1.2, 0.9], [-3.0, 4.0], [0.1, 0.02]])
    mean = np.array([[1.0, 1.1], [-2.5, 3.0], [0.0, 0.05]])
    cov = np.array([[[0.5, 0.1], [0.1, 0.4]], [[2.0, -0.3], [-0.3, 1.0]], [[1e-3, 0], [0, 1e-4]]])
    scale = 0.7
    together = two_component_laplace_log_likelihood(
        pt.as_tensor(values), pt.as_tensor(mean), pt.as_tensor(cov), scale
    ).eval()
    for c in range(3):
        one = two_component_laplace_log_likelihood(
            pt.as_tensor(values[c]), pt.as_tensor(mean[c]), pt.as_tensor(cov[c]), scale
        ).eval()
        assert together[c] == pytest.approx(float(one), rel=1e-12)


def test_the_release_is_charged_once_with_every_cell_count_and_the_ledger_says_cells():
    _, link = _link(_group_means("two-labels"))
    ledger = PrivacyLedger()
    release = release_bounded(
        link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(0)
    )
    (event,) = ledger.events
    assert event.sensitivity == pytest.approx(2.0 * ROUND_UP)
    assert event.noise_scale == pytest.approx(2.0 * ROUND_UP)
    assert "per cell (6 cells)" in event.statistic and "n 20%" in event.statistic
    assert release.noisy.shape == (6, 3) and release.public_n is None
    start = link.family.initial_values(release)["y_n_records_offset"]
    assert start.shape == (6,) and np.all(start >= 0)


def test_the_trace_of_the_private_model_starts_with_every_cell_count_at_least_one():
    """A cell released with a count near or below 0 starts its latent count at ≥ 1 (public:
    read from the release), so the sampler starts inside the counts' support."""
    _, link = _link(_group_means("index"))
    ledger = PrivacyLedger()
    release = release_bounded(
        link, 0.05, ledger=ledger, backend="numpy", rng=np.random.default_rng(1)
    )
    c0 = link.family.weights(link.structure, "replace-one")[0]
    start = link.family.initial_values(release)["y_n_records_offset"]
    released, scale = release.noisy[:, 0] / c0, release.scale / c0
    for jitter in (-1.0, 0.0, 1.0):  # n = b · softplus(u + r/b), PyMC's start jitter ±1
        counts = scale * np.logaddexp(0.0, start + jitter + released / scale)
        assert np.all(counts >= 1.0 - 1e-9)


def _per_group_sigma(y=Y, g=G, h=H, sigma_labels="g"):
    def build():
        labels = {"g": pm.Data("g", g), "h": pm.Data("h", h)}
        theta = pm.Normal("theta", 0.0, 3.0, shape=3)
        sigma = pm.HalfNormal("sigma", 2.0, shape=3 if sigma_labels == "g" else 2)
        pm.Normal("y", mu=theta[labels["g"]], sigma=sigma[labels[sigma_labels]], observed=y)

    return build


def test_a_per_group_sigma_is_read_per_cell_and_its_plugin_likelihood_is_exact():
    _, link = _link(_per_group_sigma())
    structure = link.structure
    assert structure.grouped and structure.n_groups == 3
    theta, sigma = np.array([0.3, 1.7, 2.2]), np.array([0.8, 1.3, 2.1])
    loglik = structure.family.plugin_log_likelihood(
        {"mu": pt.as_tensor(theta), "sigma": pt.as_tensor(sigma)},
        pt.as_tensor(link.statistics()),
        structure,
    )
    expected = stats.norm.logpdf(Y, theta[G], sigma[G]).sum()
    assert float(loglik.eval()) == pytest.approx(expected, rel=1e-10)


def test_a_mean_and_a_sigma_read_by_different_labels_are_refused():
    with pm.Model() as model:
        _per_group_sigma(sigma_labels="h")()
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="mean and sd read different group labels"):
        pymc_dp.sample(epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0


def test_one_numpy_label_array_indexed_twice_is_the_same_labels_for_mean_and_sigma():
    """``theta[G]`` and ``sigma[G]`` with one NumPy array make two graph constants: the same
    labels by value, read per cell (an adversarial review found them called different)."""

    def build():
        theta = pm.Normal("theta", 0.0, 3.0, shape=3)
        sigma = pm.HalfNormal("sigma", 2.0, shape=3)
        pm.Normal("y", mu=theta[G], sigma=sigma[G], observed=Y)

    _, link = _link(build)
    assert link.structure.grouped and link.structure.n_groups == 3
    theta, sigma = np.array([0.3, 1.7, 2.2]), np.array([0.8, 1.3, 2.1])
    loglik = link.structure.family.plugin_log_likelihood(
        {"mu": pt.as_tensor(theta), "sigma": pt.as_tensor(sigma)},
        pt.as_tensor(link.statistics()),
        link.structure,
    )
    assert float(loglik.eval()) == pytest.approx(
        stats.norm.logpdf(Y, theta[G], sigma[G]).sum(), rel=1e-10
    )


def test_equal_label_values_in_another_order_are_still_refused():
    """Two label arrays of equal values compared position by position: (g, h) against (h, g)
    is refused unless g equals h."""

    def build():
        h = (G + 1) % 3
        a = pm.Normal("a", 0.0, 3.0, shape=(3, 3))
        s = pm.HalfNormal("s", 2.0, shape=(3, 3))
        pm.Normal("y", mu=a[G, h], sigma=s[h, G], observed=Y)

    with pm.Model() as model:
        build()
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="mean and sd read different group labels"):
        pymc_dp.sample(epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0


def test_a_constant_sigma_per_group_that_is_not_positive_is_refused_before_the_release():
    with pm.Model() as model:
        labels = pm.Data("g", G)
        theta = pm.Normal("theta", 0.0, 3.0, shape=3)
        sigma = pt.as_tensor(np.array([1.0, 0.0, 2.0]))  # public constants, one is 0
        pm.Normal("y", mu=theta[labels], sigma=sigma[labels], observed=Y)
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="not finite and > 0"):
        pymc_dp.sample(epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0


def test_a_mean_with_a_nonlinear_covariate_term_is_refused_as_unsupported():
    def build():
        labels, x = pm.Data("g", G), pm.Data("x", RNG.uniform(0, 1, 60))
        theta = pm.Normal("theta", 0.0, 3.0, shape=3)
        pm.Normal("y", mu=theta[labels] * pm.math.exp(x), sigma=1.0, observed=Y)

    with pm.Model() as model:
        build()
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="per-record covariates in another form") as e:
        pymc_dp.sample(
            epsilon=1.0, data_bounds={"y": BOUNDS, "x": (0, 1)}, model=model, ledger=ledger
        )
    assert len(ledger) == 0 and "Nothing was released" in str(e.value)


def _levels_model(sd="scalar", floor=H):
    """Varying intercepts and a whole-number covariate (the radon model's floor indicator)."""

    def build():
        labels, f = pm.Data("g", G), pm.Data("floor", floor)
        a = pm.Normal("a", 0.0, 3.0, shape=3)
        b = pm.Normal("b", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 2.0, shape=3)[labels] if sd == "group" else 1.3
        if sd == "covariate":
            sigma = pm.HalfNormal("s", 2.0) * (1.0 + f)
        pm.Normal("y", mu=a[labels] + b * f, sigma=sigma, observed=Y)

    return build


def test_a_mean_reading_a_covariate_at_its_levels_is_read_per_cell_exactly():
    """``a[g] + b * floor`` (floor an integer 0/1 array): one cell per (group, level), and the
    plug-in likelihood of the per-cell statistics is the records' log-likelihood."""
    model, link = _link(_levels_model(), data_bounds={"y": BOUNDS, "floor": (0, 1)})
    structure = link.structure
    assert structure.grouped and structure.n_groups == 6 and structure.label_sizes == (3, 2)
    assert [b.key for b in structure.covariate_bins] == ["floor"]
    a, b = np.array([0.3, 1.7, 2.2]), -0.8
    means = (a[:, None] + b * np.array([0.0, 1.0])[None, :]).reshape(-1)  # cell g·2 + level
    loglik = structure.family.plugin_log_likelihood(
        {"mu": pt.as_tensor(means), "sigma": pt.as_tensor(1.3)},
        pt.as_tensor(link.statistics()),
        structure,
    )
    expected = stats.norm.logpdf(Y, a[G] + b * H, 1.3).sum()
    assert float(loglik.eval()) == pytest.approx(expected, rel=1e-10)
    # the cell graph is the model's mean at each (group, level)
    graph = pytensor.function(
        [model["a"], model["b"]], structure.parameters["mu"], on_unused_input="ignore"
    )
    assert np.allclose(graph(a, b), means)


def test_a_covariate_level_outside_its_bounds_is_refused_before_the_release():
    with pm.Model() as model:
        _levels_model(floor=np.where(H == 1, 2, 0))()
    ledger = PrivacyLedger()
    with pytest.raises(pymc_dp.InvalidPrivateDataError, match="floor"):
        pymc_dp.sample(
            epsilon=1.0,
            data_bounds={"y": BOUNDS, "floor": (0, 1)},
            model=model,
            ledger=ledger,
        )
    assert len(ledger) == 0


@pytest.mark.parametrize(
    ("sd", "floor", "match"),
    [
        ("scalar", H + 0.0, r"\['floor'\] cut into bins"),
        ("group", H, "sd is read per group while its mean reads per-record covariates"),
        ("covariate", H, "sd reads per-record covariates"),
        ("scalar", H, "bound data_bounds\\['floor'\\] = \\(low, high\\) is missing"),
    ],
)
def test_normal_covariate_forms_that_are_not_exact_are_refused_with_nothing_charged(
    sd, floor, match
):
    with pm.Model() as model:
        _levels_model(sd=sd, floor=floor)()
    bounds = {"y": BOUNDS} if "missing" in match else {"y": BOUNDS, "floor": (0, 1)}
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=match) as error:
        pymc_dp.sample(epsilon=1.0, data_bounds=bounds, model=model, ledger=ledger)
    assert len(ledger) == 0 and "Nothing was released" in str(error.value)


@pytest.mark.integration
def test_at_a_large_epsilon_varying_intercepts_with_a_level_covariate_match_pm_sample():
    """The radon model's form, a[g] + b * floor: at ε = 10⁴ the private posterior of a, b
    and σ is pm.sample's on the raw records (5 Monte Carlo SEs, sds within 15%)."""
    rng = np.random.default_rng(11)
    g, f = rng.integers(0, 3, 400), rng.integers(0, 2, 400)
    y = np.clip(rng.normal(np.array([0.5, 1.5, 2.5])[g] - 0.7 * f, 0.9), *BOUNDS)

    def build():
        a = pm.Normal("a", 0.0, 3.0, shape=3)
        b = pm.Normal("b", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", mu=a[pm.Data("g", g)] + b * pm.Data("floor", f), sigma=sigma, observed=y)

    options = dict(draws=1000, tune=1000, chains=2, cores=1, random_seed=2, progressbar=False)
    with pm.Model():
        build()
        private = pymc_dp.sample(
            epsilon=1e4,
            data_bounds={"y": BOUNDS, "floor": (0, 1)},
            noise_backend="numpy",
            noise_rng=np.random.default_rng(3),
            **options,
        )
    with pm.Model():
        build()
        exact = pm.sample(**options)
    assert int(private["sample_stats"]["diverging"].sum()) == 0
    for name in ("a", "b", "sigma"):
        dp = private["posterior"][name].values.reshape(2000, -1)
        np_ = exact["posterior"][name].values.reshape(2000, -1)
        error = np.sqrt(dp.var(0) / 200 + np_.var(0) / 200)
        assert np.all(np.abs(dp.mean(0) - np_.mean(0)) < 5 * error), name
        assert np.all(np.abs(dp.std(0) / np_.std(0) - 1) < 0.15), name
    assert "floor" not in str(private["posterior"].coords)  # nothing record-level in the trace


def _large_epsilon_against_pm_sample(build, ledger=None):
    """ε = 10⁴ and pm.sample on the raw records, same options: every θ_g and σ (scalar or per
    group) within 5 Monte Carlo standard errors (ESS ≥ 200) and sds within 15%."""
    options = dict(draws=1000, tune=1000, chains=2, cores=1, random_seed=2, progressbar=False)
    with pm.Model():
        build()
        private = pymc_dp.sample(
            epsilon=1e4,
            data_bounds={"y": BOUNDS},
            noise_backend="numpy",
            noise_rng=np.random.default_rng(3),
            ledger=ledger,
            **options,
        )
    with pm.Model():
        build()
        exact = pm.sample(**options)
    for name in ("theta", "sigma"):
        dp = private["posterior"][name].values.reshape(2000, -1)
        np_ = exact["posterior"][name].values.reshape(2000, -1)
        error = np.sqrt(dp.var(0) / 200 + np_.var(0) / 200)
        assert np.all(np.abs(dp.mean(0) - np_.mean(0)) < 5 * error), name
        assert np.all(np.abs(dp.std(0) / np_.std(0) - 1) < 0.15), name
    return private


@pytest.mark.integration
def test_at_a_large_epsilon_the_group_means_posterior_is_the_non_private_one():
    """ε = 10⁴: the noise-aware posterior is pm.sample's on the raw records; one charge."""
    rng = np.random.default_rng(7)
    g = rng.integers(0, 3, 900)
    y = np.clip(rng.normal(np.array([-1.0, 0.5, 2.0])[g], 1.0), *BOUNDS)
    ledger = PrivacyLedger()
    private = _large_epsilon_against_pm_sample(_group_means("index", y=y, g=g), ledger)
    assert len(ledger) == 1
    assert int(private["sample_stats"]["diverging"].sum()) == 0
    assert "y_n_records" in private["posterior"]


@pytest.mark.integration
def test_at_a_large_epsilon_a_per_group_sigma_posterior_is_the_non_private_one():
    """As above with σ_g per group."""
    rng = np.random.default_rng(8)
    g = rng.integers(0, 3, 900)
    y = np.clip(rng.normal(np.array([-1.0, 0.5, 2.0])[g], np.array([0.5, 1.0, 1.5])[g]), *BOUNDS)
    _large_epsilon_against_pm_sample(_per_group_sigma(y=y, g=g, h=np.zeros(900, dtype=int)))


@pytest.mark.parametrize(
    "taken", ["y_n_records_offset", "y_n_records", "y_noise_variance", "y_cell_log_size"]
)
def test_a_model_variable_named_like_a_latent_variable_is_refused_before_the_release(taken):
    """The private model adds ``y_n_records_offset`` and ``y_n_records`` after the release: a
    model that already has such a name would fail after its charge (an adversarial review
    found this for group means, grouped Poisson and add-remove-one)."""
    with pm.Model() as model:
        _group_means("index")()
        pm.Normal(taken, 0.0, 1.0)
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=f"\\['{taken}'\\] named like the latent"):
        pymc_dp.sample(epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0


def test_labels_that_are_the_records_themselves_are_refused():
    """``mu=theta[y]`` with ``observed=y``: a mean that reads its own values (the adversarial
    review found it accepted and charged)."""
    values = RNG.integers(0, 3, 60)  # whole numbers inside the bounds
    with pm.Model() as model:
        records = pm.Data("records", values)
        theta = pm.Normal("theta", 0.0, 3.0, shape=3)
        pm.Normal("y", mu=theta[records], sigma=1.0, observed=records)
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=r"y: .*mean.*reads") as raised:
        pymc_dp.sample(epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0 and "Nothing was released" in str(raised.value)


def test_a_refusal_of_a_per_record_mean_does_not_print_the_number_of_records():
    """Under add-remove-one the number of records is private: the refusal names the shape of
    the problem, not the parameter's length (the review found "(40 values)")."""
    values = RNG.normal(0.0, 1.0, 37)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 1.0, shape=37)  # one latent mean per record
        pm.Normal("y", mu=theta, sigma=1.0, observed=values)
    with pytest.raises(NonPrivateModelError, match="varies by record") as raised:
        pymc_dp.sample(
            epsilon=1.0, data_bounds={"y": BOUNDS}, model=model, neighbouring="add-remove-one"
        )
    assert "37" not in str(raised.value)


@pytest.mark.parametrize("grouped", [False, True])
def test_an_sd_read_from_the_records_is_refused_as_such_even_with_a_mis_keyed_bound(grouped):
    """The refusal that no declaration can fix comes first: an sd computed from the records
    is named as reading them, not as a missing bound (``data_bounds`` keyed by another
    name). An adversarial review found the missing-bound message."""
    with pm.Model() as model:
        records = pm.Data("y_data", Y)
        mean = pm.Normal("theta", 0.0, 3.0, shape=3)[pm.Data("g", G)] if grouped else 0.0
        pm.Normal("y", mu=mean, sigma=pt.std(records) + 0.1, observed=records)
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="reads the likelihood's own records"):
        pymc_dp.sample(epsilon=1.0, data_bounds={"Y": BOUNDS}, model=model, ledger=ledger)
    assert len(ledger) == 0
