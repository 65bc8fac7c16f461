"""Tests that kill the surviving mutants of the families' sensitivities, log-likelihood bounds Δ
and record validation (``pymc_dp/families/*.py``; docs/mutation_testing.md).

Every Δ is checked against a brute-force range of SciPy's log-pmf/log-pdf over a grid of
records and parameters that contains the maximisers the docstrings name (the ends of the
truncated parameter space, the vertices of the truncated simplex, λ = y), and every
sensitivity against its docstring's closed form; never a copy of an output of the package.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_dp import InvalidPrivateDataError
from pymc_dp.families import (
    BOUNDED_FAMILIES,
    BetaBernoulli,
    BetaBinomial,
    BoundedLink,
    BoundedStructure,
    DirichletCategorical,
    DirichletMultinomial,
    RecordDomain,
    group_sums,
)
from pymc_dp.families.base import (
    ConjugateLink,
    private_trials_log_likelihood_bound,
    probability_truncation,
    reject_out_of_range,
    require_integers,
    table_l2_sensitivity,
)
from pymc_dp.families.beta import bernoulli_log_likelihood_bound, binomial_log_likelihood_bound
from pymc_dp.families.bounded import (
    check_bounded_values,
    check_group_labels,
    declared_bounds,
    to_unit_interval,
)
from pymc_dp.families.dirichlet import (
    categorical_log_likelihood_bound,
    multinomial_log_likelihood_bound,
)
from pymc_dp.families.gamma import poisson_log_likelihood_bound, poisson_record_statistics
from pymc_dp.families.normal import normal_log_likelihood_bound, normal_record_statistics
from pymc_dp.families.second_moments import (
    entry_kinds,
    entry_sensitivity,
    second_moment_l2_sensitivity,
    second_moment_names,
    second_moment_sensitivity,
    second_moment_shares,
    second_moment_statistics,
    second_moment_weights,
)

NORMAL, POISSON, REGRESSION = (
    BOUNDED_FAMILIES[name] for name in ("normal", "poisson", "linear-regression")
)
REL = 1e-9


def log_range(values):
    values = np.asarray(values, dtype=np.float64)
    return float(values.max() - values.min())


# --- Δ: Beta families ---------------------------------------------------------------------------
@pytest.mark.parametrize("a0", [0.01, 0.2, 0.3, 0.499])
def test_bernoulli_delta_is_the_range_of_the_log_pmf(a0):
    brute = max(log_range(stats.bernoulli.logpmf([0, 1], p)) for p in np.linspace(a0, 1 - a0, 51))
    assert bernoulli_log_likelihood_bound(a0) == pytest.approx(brute, rel=REL)
    assert bernoulli_log_likelihood_bound(a0) == pytest.approx(math.log((1 - a0) / a0), rel=REL)


@pytest.mark.parametrize(("n", "a0"), [(1, 0.2), (2, 0.1), (5, 0.3), (12, 0.05), (7, 0.45)])
def test_binomial_delta_is_the_range_of_the_log_pmf_over_records_and_p(n, a0):
    y = np.arange(n + 1)
    brute = max(log_range(stats.binom.logpmf(y, n, p)) for p in np.linspace(a0, 1 - a0, 101))
    assert binomial_log_likelihood_bound(n, a0) == pytest.approx(brute, rel=REL)
    assert binomial_log_likelihood_bound(n, a0) >= n * math.log((1 - a0) / a0) * (1 - REL)


def test_binomial_of_one_trial_is_bernoulli():
    assert binomial_log_likelihood_bound(1, 0.2) == pytest.approx(math.log(4), rel=REL)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_binomial_refuses_a_bad_number_of_trials(bad):
    with pytest.raises(
        ValueError, match=rf"^binomial: n_trials must be an integer >= 1, got {bad!r}$"
    ):
        binomial_log_likelihood_bound(bad, 0.2)


@pytest.mark.parametrize("bad", [0.0, -0.1, math.nan, math.inf, 0.5, 0.7])
def test_beta_deltas_refuse_a_bad_truncation_naming_the_family(bad):
    with pytest.raises(ValueError, match=r"^bernoulli: "):
        bernoulli_log_likelihood_bound(bad)
    with pytest.raises(ValueError, match=r"^binomial: "):
        binomial_log_likelihood_bound(3, bad)


def test_probability_truncation_messages_and_boundaries():
    assert probability_truncation(0.2, 2, "f") == 0.2
    assert probability_truncation(1 / 3 - 1e-12, 3, "f") == pytest.approx(1 / 3)
    assert type(probability_truncation(np.float32(0.25), 2, "f")) is float
    with pytest.raises(
        ValueError,
        match=(
            r"^fam: Δ is infinite without a truncation of the probabilities; give "
            r"truncation a0 > 0 \(each probability >= a0\), got 0$"
        ),
    ):
        probability_truncation(0, 2, "fam")
    with pytest.raises(ValueError, match=r"^fam: truncation a0 must be < 1/4, got 0.25$"):
        probability_truncation(0.25, 4, "fam")


@pytest.mark.parametrize(("m", "theta"), [(1, 0.2), (3, 0.1), (4, 0.5), (6, 0.05)])
def test_private_trials_delta_is_the_range_over_trials_counts_and_p(m, theta):
    values = []
    for trials in range(m + 1):
        y = np.arange(trials + 1)
        for p in np.linspace(theta, 1 - theta, 41):
            # log h dropped (kept in c): y log p + (m − y) log(1 − p)
            values.extend(
                stats.binom.logpmf(y, trials, p)
                - stats.binom.logpmf(y, trials, 0.5)
                + trials * math.log(0.5)
            )
    assert private_trials_log_likelihood_bound(m, theta) == pytest.approx(
        log_range(values), rel=REL
    )
    assert private_trials_log_likelihood_bound(m, theta) == pytest.approx(
        m * math.log(1 / theta), rel=REL
    )


def test_private_trials_delta_refusals():
    for bad in (0, -2, 2.5):
        with pytest.raises(ValueError, match=r"^max_trials must be an integer >= 1, got "):
            private_trials_log_likelihood_bound(bad, 0.1)
    for bad in (0.0, -0.1, 0.5000001, 1.0):
        with pytest.raises(
            ValueError, match=r"^Δ is infinite without a truncation of the probabilities; the "
        ):
            private_trials_log_likelihood_bound(2, bad)


# --- Δ: Dirichlet families ----------------------------------------------------------------------
def _truncated_simplex(a0, k, rng):
    vertices = np.full((k, k), a0)
    np.fill_diagonal(vertices, 1 - (k - 1) * a0)
    inside = a0 + (1 - k * a0) * rng.dirichlet(np.ones(k), size=200)
    return np.vstack([vertices, inside])


@pytest.mark.parametrize(("k", "a0"), [(2, 0.2), (3, 0.1), (5, 0.01), (4, 0.2)])
def test_categorical_delta_is_the_log_ratio_range_over_the_truncated_simplex(k, a0):
    thetas = _truncated_simplex(a0, k, np.random.default_rng(0))
    brute = max(log_range(np.log(theta)) for theta in thetas)
    assert categorical_log_likelihood_bound(a0, k) == pytest.approx(brute, rel=REL)


@pytest.mark.parametrize(("n", "k", "a0"), [(1, 3, 0.1), (3, 2, 0.2), (4, 3, 0.05)])
def test_multinomial_delta_is_the_range_of_the_utility(n, k, a0):
    thetas = _truncated_simplex(a0, k, np.random.default_rng(1))
    counts = np.array([c for c in np.ndindex(*(n + 1,) * k) if sum(c) == n])
    brute = max(log_range(counts @ np.log(theta)) for theta in thetas)
    assert multinomial_log_likelihood_bound(n, a0, k) == pytest.approx(brute, rel=REL)


def test_dirichlet_delta_refusals():
    for bad in (1, 0, 2.5):
        with pytest.raises(ValueError, match=r"^need K >= 2 categories, got "):
            categorical_log_likelihood_bound(0.1, bad)
    with pytest.raises(ValueError, match=r"^categorical: truncation a0 must be < 1/3"):
        categorical_log_likelihood_bound(1 / 3, 3)
    for bad in (0, 1.5, -1):
        with pytest.raises(
            ValueError, match=r"^multinomial: n_trials must be an integer >= 1, got "
        ):
            multinomial_log_likelihood_bound(bad, 0.1, 3)


# --- Δ: Poisson and Normal ----------------------------------------------------------------------
POISSON_CASES = [(5, 0.5, 3.0, 0), (10, 2.0, 4.0, 0), (8, 0.1, 20.0, 2), (3, 1.0, 1.5, 3)]


@pytest.mark.parametrize(("big_m", "low", "high", "small_m"), POISSON_CASES)
def test_poisson_delta_with_one_rate_is_the_range_over_counts_at_a_shared_rate(
    big_m, low, high, small_m
):
    y = np.arange(small_m, big_m + 1)
    rates = np.geomspace(low, high, 201)
    brute = max(log_range(stats.poisson.logpmf(y, rate)) for rate in rates)
    got = poisson_log_likelihood_bound(big_m, low, high, min_count=small_m)
    assert got == pytest.approx(brute, rel=REL, abs=1e-12)


@pytest.mark.parametrize(("big_m", "low", "high", "small_m"), POISSON_CASES)
def test_grouped_poisson_delta_is_the_range_over_counts_and_rates(big_m, low, high, small_m):
    y = np.arange(small_m, big_m + 1)
    rates = np.unique(np.concatenate([np.geomspace(low, high, 201), np.clip(y, low, high)]))
    brute = log_range(stats.poisson.logpmf(y[:, None], rates[None, :]))
    got = poisson_log_likelihood_bound(big_m, low, high, min_count=small_m, grouped=True)
    assert got == pytest.approx(brute, rel=REL)


def test_poisson_delta_refusals():
    for bad in (None, math.inf, 2.5, 0):
        with pytest.raises(ValueError, match=r"^poisson: Δ is infinite for unbounded counts"):
            poisson_log_likelihood_bound(bad, 1.0, 2.0)
    for low, high in ((0.0, 2.0), (2.0, 2.0), (3.0, 2.0), (1.0, math.inf), (-1.0, 2.0)):
        with pytest.raises(ValueError, match=r"^poisson: Δ is infinite unless the rate is"):
            poisson_log_likelihood_bound(5, low, high)
    for bad in (-1, 6, 1.5):
        with pytest.raises(ValueError, match=r"^poisson: need 0 <= min_count <= max_count"):
            poisson_log_likelihood_bound(5, 1.0, 2.0, min_count=bad)
    assert poisson_log_likelihood_bound(5, 1.0, 2.0, min_count=5) == 0.0


@pytest.mark.parametrize("grouped", [False, True])
def test_poisson_delta_counts_from_0_by_default_and_accepts_one_count(grouped):
    for big_m in (1, 6):
        y = np.arange(big_m + 1)
        rates = np.unique(np.concatenate([np.geomspace(0.5, 3.0, 201), np.clip(y, 0.5, 3.0)]))
        logpmf = stats.poisson.logpmf(y[:, None], rates[None, :])
        if grouped:
            brute = log_range(logpmf)
        else:
            brute = max(log_range(logpmf[:, j]) for j in range(rates.size))
        got = poisson_log_likelihood_bound(big_m, 0.5, 3.0, grouped=grouped)
        assert got == pytest.approx(brute, rel=REL)


NORMAL_CASES = [
    (0.0, 1.0, 0.0, 1.0, 1.0),
    (-2.0, 3.0, -1.0, 0.5, 0.7),
    (0.0, 1.0, 2.0, 5.0, 2.0),  # means above the data
    (0.0, 10.0, -4.0, -1.0, 1.5),  # means below the data
    (0.0, 1.0, 3.0, 5.0, 0.8),  # means 2 above the data
    (-1.0, 1.0, -7.0, -3.5, 1.0),  # means 2.5 below the data
    (1.0, 2.0, -5.0, 8.0, 1.0),  # means around the data
]


def _normal_grid(a, b, m_lo, m_hi):
    mus = np.unique(np.concatenate([np.linspace(m_lo, m_hi, 401), np.clip([a, b], m_lo, m_hi)]))
    xs = np.unique(np.concatenate([np.linspace(a, b, 401), np.clip(mus, a, b)]))
    return xs, mus


@pytest.mark.parametrize(("a", "b", "m_lo", "m_hi", "sigma"), NORMAL_CASES)
def test_normal_delta_is_the_range_over_records_at_a_shared_mean(a, b, m_lo, m_hi, sigma):
    xs, mus = _normal_grid(a, b, m_lo, m_hi)
    brute = max(log_range(stats.norm.logpdf(xs, mu, sigma)) for mu in mus)
    got = normal_log_likelihood_bound(a, b, m_lo, m_hi, sigma)
    assert got == pytest.approx(brute, rel=1e-6)


@pytest.mark.parametrize(("a", "b", "m_lo", "m_hi", "sigma"), NORMAL_CASES)
def test_grouped_normal_delta_is_the_range_over_records_and_means(a, b, m_lo, m_hi, sigma):
    xs, mus = _normal_grid(a, b, m_lo, m_hi)
    brute = log_range(stats.norm.logpdf(xs[:, None], mus[None, :], sigma))
    got = normal_log_likelihood_bound(a, b, m_lo, m_hi, sigma, grouped=True)
    assert got == pytest.approx(brute, rel=1e-9)


def test_normal_delta_refusals():
    for low, high in ((None, 1.0), (0.0, None), (-math.inf, 1.0), (0.0, math.nan)):
        with pytest.raises(ValueError, match=r"^normal: Δ is infinite without finite data"):
            normal_log_likelihood_bound(low, high, 0.0, 1.0, 1.0)
        with pytest.raises(ValueError, match=r"^normal: Δ is infinite without finite mean"):
            normal_log_likelihood_bound(0.0, 1.0, low, high, 1.0)
    with pytest.raises(ValueError, match=r"^normal: data bounds out of order: \[2.0, 1.0\]$"):
        normal_log_likelihood_bound(2.0, 1.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"^normal: mean bounds out of order"):
        normal_log_likelihood_bound(0.0, 1.0, 1.0, 0.0, 1.0)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match=r"^normal: sigma must be finite and > 0, got "):
            normal_log_likelihood_bound(0.0, 1.0, 0.0, 1.0, bad)
    assert normal_log_likelihood_bound(1.0, 1.0, 0.0, 0.0, 1.0) == 0.0


# --- per-record statistics, sensitivities --------------------------------------------------------
def test_record_statistics_of_the_conjugate_families():
    np.testing.assert_array_equal(
        BetaBernoulli().record_statistics(np.array([1, 0]), RecordDomain(2)), [[1, 0], [0, 1]]
    )
    binomial_domain = RecordDomain(2, 4, np.array([4, 2]))
    np.testing.assert_array_equal(
        BetaBinomial().record_statistics(np.array([1, 2]), binomial_domain), [[1, 3], [2, 0]]
    )
    np.testing.assert_array_equal(
        DirichletCategorical().record_statistics(np.array([2, 0]), RecordDomain(3)),
        [[0, 0, 1], [1, 0, 0]],
    )
    # whole-number floats pass validation and index the one-hot rows
    np.testing.assert_array_equal(
        DirichletCategorical().record_statistics(np.array([2.0, 0.0]), RecordDomain(3)),
        [[0, 0, 1], [1, 0, 0]],
    )
    # S(x) is float64 whatever the dtype of the records (ConjugateFamily.record_statistics)
    for family, data, domain in (
        (BetaBernoulli(), np.array([1, 0]), RecordDomain(2)),
        (BetaBinomial(), np.array([1, 2]), RecordDomain(2, 4, np.array([4, 2]))),
        (DirichletCategorical(), np.array([1, 0]), RecordDomain(3)),
        (DirichletMultinomial(), np.array([[1, 2], [0, 3]]), RecordDomain(2, 3, 3)),
    ):
        assert family.record_statistics(data, domain).dtype == np.float64, family.name
    np.testing.assert_array_equal(
        DirichletMultinomial().record_statistics(np.array([[1, 2], [0, 3]]), RecordDomain(2, 3, 3)),
        [[1, 2], [0, 3]],
    )
    assert BetaBinomial.record_l1_bound(RecordDomain(2, 7)) == 7.0
    assert BetaBinomial.record_l2_bound(RecordDomain(2, 7)) == 7.0
    np.testing.assert_array_equal(poisson_record_statistics([3, 0]), [[3, 1], [0, 1]])
    np.testing.assert_allclose(
        normal_record_statistics([1.0, -2.0], 2.0), [[0.25, 0.25], [-0.5, 0.25]]
    )


def test_table_l2_sensitivity_is_c_sqrt2_c_or_c():
    assert table_l2_sensitivity(3, "add-remove-one", False) == 3.0
    assert table_l2_sensitivity(3, "add-remove-one", True) == 3.0
    assert table_l2_sensitivity(3, "replace-one", True) == 3.0
    assert table_l2_sensitivity(3, "replace-one", False) == pytest.approx(3 * math.sqrt(2))
    with pytest.raises(ValueError, match=r"^unknown neighbouring relation 'swap'$"):
        table_l2_sensitivity(3, "swap", False)
    with pytest.raises(ValueError, match=r"^unknown neighbouring relation 'swap'$"):
        table_l2_sensitivity(3, "swap", True)


def test_group_sums():
    stats_ = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(group_sums(stats_, None, 1), [[2.0, 2.0]])
    np.testing.assert_array_equal(
        group_sums(stats_, np.array([2, 0, 2]), 4), [[0, 1], [0, 0], [2, 1], [0, 0]]
    )
    assert group_sums(stats_.astype(int), None, 1).dtype == np.float64


@pytest.mark.parametrize("q", [1, 2, 3])
def test_second_moment_sensitivities_of_the_weighted_centred_entries(q):
    """c_j = s_j/Δ_j, so Σ_j c_j Δ_j = Σ_j s_j = 1 (the triangle bound), reached under
    add-remove-one by the record at every upper bound; replace-one has a smaller exact
    maximum ((c₁ + c₂)²/(4c₂) with one variable)."""
    for neighbouring in ("add-remove-one", "replace-one"):
        shares = second_moment_shares(q, neighbouring)
        weights = second_moment_weights(q, neighbouring)
        ranges = entry_sensitivity(q, neighbouring)
        assert shares.sum() == pytest.approx(1.0, rel=1e-12)
        np.testing.assert_allclose(weights * ranges, shares, rtol=1e-12)
        assert second_moment_l2_sensitivity(q, neighbouring) == pytest.approx(
            math.sqrt(np.sum(shares**2)), rel=1e-12
        )
    assert second_moment_sensitivity(q, "add-remove-one") == pytest.approx(1.0, rel=1e-12)
    upper = second_moment_statistics(np.full((1, q), 0.5))  # every entry at its largest
    weighted = upper * second_moment_weights(q, "add-remove-one")
    assert np.abs(weighted).sum() == pytest.approx(1.0, rel=1e-12)
    if q == 1:
        c1, c2 = second_moment_weights(1, "replace-one")[1:]
        assert (c1, c2) == (pytest.approx(0.3), pytest.approx(2.8))
        assert second_moment_sensitivity(1, "replace-one") == pytest.approx(
            (c1 + c2) ** 2 / (4 * c2)
        )
    else:  # the exact maximum (replace_one_maximiser), below the triangle bound 1
        expected = {2: 0.6618058968058969, 3: 0.6401394422310758}[q]
        assert second_moment_sensitivity(q, "replace-one") == pytest.approx(expected, rel=1e-12)
    # replace-one never moves n; n is released (with a share) only under add-remove-one
    assert second_moment_shares(q, "replace-one")[0] == 0.0
    assert second_moment_shares(q, "add-remove-one")[0] == pytest.approx(0.05)


def test_stated_sensitivities_round_up_past_floating_point_and_fall_back_beyond_exact():
    from fractions import Fraction

    from pymc_dp.families.second_moments import EXACT_UP_TO, ROUND_UP

    # q = 1: the closed form in exact rational arithmetic on the float weights
    c1, c2 = (Fraction(float(c)) for c in second_moment_weights(1, "replace-one")[1:])
    exact = (c1 + c2) ** 2 / (4 * c2)
    assert Fraction(second_moment_sensitivity(1, "replace-one")) >= exact
    # add-remove-one: Σ c_j Δ_j exactly, for every q
    for q in range(1, 12):
        weights = second_moment_weights(q, "add-remove-one")
        ranges = entry_sensitivity(q, "add-remove-one")
        total = sum(
            Fraction(float(w)) * Fraction(float(r)) for w, r in zip(weights, ranges, strict=True)
        )
        assert Fraction(second_moment_sensitivity(q, "add-remove-one")) >= total
    # beyond EXACT_UP_TO variables the triangle bound Σ c_j Δ_j = 1 (valid, not the maximum)
    q = EXACT_UP_TO + 1
    assert second_moment_sensitivity(q, "replace-one") == pytest.approx(ROUND_UP, rel=1e-12)
    assert second_moment_sensitivity(EXACT_UP_TO, "replace-one") < 0.62


def test_entry_ranges_of_centred_records():
    assert entry_kinds(2) == [
        "n",
        "sum",
        "response sum",
        "square",
        "response product",
        "response square",
    ]
    np.testing.assert_array_equal(
        entry_sensitivity(2, "add-remove-one"), [1, 0.5, 0.5, 0.25, 0.25, 0.25]
    )
    np.testing.assert_array_equal(entry_sensitivity(2, "replace-one"), [0, 1, 1, 0.25, 0.5, 0.25])
    assert entry_kinds(3)[5] == "product"  # Σx̃₀x̃₁, in the XᵀX block
    # the regression's shares by block: Xᵀy 46%, split between its two entries
    shares = second_moment_shares(3, "replace-one")
    assert shares[[6, 8]].tolist() == [pytest.approx(0.23), pytest.approx(0.23)]
    assert shares[[4, 5, 7]].sum() == pytest.approx(0.13)


def test_second_moment_names_and_statistics():
    assert second_moment_names(["a", "b"]) == [
        "n",
        "sum(a)",
        "sum(b)",
        "sum(a*a)",
        "sum(a*b)",
        "sum(b*b)",
    ]
    w = np.array([[0.5, 1.0], [0.25, 0.0]])
    np.testing.assert_allclose(
        second_moment_statistics(w), [2, 0.75, 1.0, 0.3125, 0.5, 1.0], rtol=1e-15
    )


def _normal(values, bounds=(-2.0, 3.0), clamp=()):
    structure = BoundedStructure("x", NORMAL, bounds, {}, clamp=frozenset(clamp))
    return BoundedLink(structure, np.asarray(values, dtype=float))


def _poisson(counts, groups=None, n_groups=1, bounds=(0, 8), clamp=()):
    structure = BoundedStructure(
        "y",
        POISSON,
        bounds,
        {},
        n_groups=n_groups,
        grouped=n_groups > 1,
        clamp=frozenset(clamp),
    )
    return BoundedLink(
        structure, np.asarray(counts), groups=None if groups is None else np.asarray(groups)
    )


def _regression(y, x, clamp=()):
    structure = BoundedStructure(
        "y",
        REGRESSION,
        (-1.0, 4.0),
        {},
        covariates="X",
        covariate_bounds=(np.array([0.0, -1.0]), np.array([2.0, 1.0])),
        clamp=frozenset(clamp),
    )
    return BoundedLink(structure, np.asarray(y, float), covariates=np.asarray(x, float))


def test_bounded_families_released_components_and_sensitivities():
    one, grouped = _poisson([1]).structure, _poisson([1], [0], 3).structure
    assert POISSON.released_components(one, "replace-one").tolist() == [1]
    assert POISSON.released_components(one, "add-remove-one").tolist() == [0, 1]
    assert POISSON.released_components(grouped, "replace-one").tolist() == [0, 1]
    assert POISSON.sensitivity(one, "replace-one") == 1.0
    assert POISSON.sensitivity(one, "add-remove-one") == 2.0
    assert POISSON.sensitivity(grouped, "add-remove-one") == 2.0
    assert POISSON.sensitivity(grouped, "replace-one") == 4.0
    assert POISSON.l2_sensitivity(one, "replace-one") == 1.0
    assert POISSON.l2_sensitivity(one, "add-remove-one") == pytest.approx(math.sqrt(2))
    assert POISSON.l2_sensitivity(grouped, "add-remove-one") == pytest.approx(math.sqrt(2))
    assert POISSON.l2_sensitivity(grouped, "replace-one") == 2.0
    normal = _normal([0.0]).structure
    assert NORMAL.released_components(normal, "replace-one").tolist() == [1, 2]
    assert NORMAL.released_components(normal, "add-remove-one").tolist() == [0, 1, 2]
    for neighbouring in ("replace-one", "add-remove-one"):  # index arrays: integers
        assert NORMAL.released_components(normal, neighbouring).dtype.kind == "i"
        assert POISSON.released_components(one, neighbouring).dtype.kind == "i"
    assert NORMAL.sensitivity(normal, "replace-one") == pytest.approx(3.1**2 / 11.2)
    assert NORMAL.sensitivity(normal, "add-remove-one") == pytest.approx(1.0)
    assert NORMAL.l2_sensitivity(normal, "add-remove-one") == pytest.approx(
        math.sqrt(0.05**2 + 0.285**2 + 0.665**2)
    )
    np.testing.assert_allclose(NORMAL.weights(normal, "replace-one"), [0, 0.3, 2.8])
    regression = _regression([0.0], [[0.0, 0.0]]).structure
    assert REGRESSION.q(regression) == 3
    assert REGRESSION.released_components(regression, "replace-one").tolist() == list(range(1, 10))
    assert REGRESSION.sensitivity(regression, "replace-one") == pytest.approx(0.6401394422310758)
    assert REGRESSION.sensitivity(regression, "add-remove-one") == pytest.approx(1.0)
    assert REGRESSION.l2_sensitivity(regression, "replace-one") == pytest.approx(
        math.sqrt(2 * 0.045**2 + 0.14**2 + 3 * (0.13 / 3) ** 2 + 2 * 0.23**2 + 0.18**2)
    )
    np.testing.assert_array_equal(POISSON.weights(one, "replace-one"), [1.0, 1.0])


def test_public_n_only_for_one_group_under_replace_one():
    np.testing.assert_array_equal(POISSON.public_n(_poisson([1, 2, 3]), "replace-one"), [3.0])
    assert POISSON.public_n(_poisson([1, 2, 3]), "add-remove-one") is None
    assert POISSON.public_n(_poisson([1, 2], [0, 1], 2), "replace-one") is None
    np.testing.assert_array_equal(NORMAL.public_n(_normal([[0.0, 1.0]]), "replace-one"), [2.0])


def test_bounded_statistics_on_the_unit_scale():
    np.testing.assert_allclose(
        POISSON.statistics(_poisson([0, 8, 2], [1, 1, 0], 2)), [[1, 0.25], [2, 1.0]]
    )
    # centred on the midpoint: u − ½ = −½, ½, 0
    np.testing.assert_allclose(NORMAL.statistics(_normal([-2.0, 3.0, 0.5])), [[3, 0.0, 0.5]])
    np.testing.assert_allclose(
        REGRESSION.unit_records(_regression([4.0, -1.0], [[2.0, -1.0], [1.0, 0.0]])),
        [[1.0, 0.0, 1.0], [0.5, 0.5, 0.0]],
    )


# --- record validation ---------------------------------------------------------------------------
def test_require_integers():
    out = require_integers(np.array([True, False]), "v")
    assert out.dtype == np.int64 and out.tolist() == [1, 0]
    assert require_integers(np.array([2.0, -3.0]), "v").tolist() == [2, -3]
    assert require_integers(np.array([2.0]), "v").dtype == np.int64
    with pytest.raises(InvalidPrivateDataError, match=r"^v: counts must be numeric, got <U1$"):
        require_integers(np.array(["a"]), "v", "counts")
    with pytest.raises(
        InvalidPrivateDataError,
        match=(
            r"^v: values contain NaN; private data must be complete \(pymc_dp never imputes "
            r"private records\)\. Nothing was released\.$"
        ),
    ):
        require_integers(np.array([1.0, np.nan]), "v")
    for bad in ([1.0, np.inf], [0.5], [-np.inf]):
        with pytest.raises(
            InvalidPrivateDataError, match=r"^v: values must be finite whole numbers$"
        ):
            require_integers(np.array(bad), "v")


def test_reject_out_of_range_counts_without_values_and_accepts_the_ends():
    reject_out_of_range(np.array([0, 3]), 0, 3, "v", "things")
    with pytest.raises(
        InvalidPrivateDataError,
        match=r"^v: 2 things outside the declared domain \[0, 3\]. Nothing was released.$",
    ):
        reject_out_of_range(np.array([-1, 4, 2]), 0, 3, "v", "things")
    with pytest.raises(
        InvalidPrivateDataError,
        match=r"^v: 1 things outside the declared "
        r"domain \[0, per-record trials\]",
    ):
        reject_out_of_range(np.array([1, 3]), 0, np.array([2, 2]), "v", "things")


def test_conjugate_validation_of_records():
    BetaBernoulli().validate(np.array([0, 1]), RecordDomain(2), "y")
    for bad in ([2], [-1], [0.5]):
        with pytest.raises(InvalidPrivateDataError, match=r"^y: "):
            BetaBernoulli().validate(np.array(bad), RecordDomain(2), "y")
    binomial_domain = RecordDomain(2, 4, np.array([4, 2]))
    BetaBinomial().validate(np.array([4, 2]), binomial_domain, "y")
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 counts outside"):
        BetaBinomial().validate(np.array([4, 3]), binomial_domain, "y")
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 counts outside"):
        BetaBinomial().validate(np.array([-1, 0]), binomial_domain, "y")
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 trial counts outside .*\[0, 4\]"):
        BetaBinomial().validate(np.array([1, 1]), RecordDomain(2, 4, np.array([5, 2])), "y")
    with pytest.raises(InvalidPrivateDataError, match=r"^y: values must be finite whole"):
        BetaBinomial().validate(np.array([0.5]), binomial_domain, "y")
    with pytest.raises(InvalidPrivateDataError, match=r"^y: trials must be finite whole"):
        BetaBinomial().validate(np.array([1]), RecordDomain(2, 4, 2.5), "y")
    DirichletCategorical().validate(np.array([0, 2]), RecordDomain(3), "c")
    with pytest.raises(InvalidPrivateDataError, match=r"^c: 1 categories outside .*\[0, 2\]"):
        DirichletCategorical().validate(np.array([0, 3]), RecordDomain(3), "c")
    with pytest.raises(InvalidPrivateDataError, match=r"^c: categories must be finite whole"):
        DirichletCategorical().validate(np.array([0.5]), RecordDomain(3), "c")


def test_multinomial_validation_of_records():
    family, domain = DirichletMultinomial(), RecordDomain(3, 4, np.array([3, 4]))
    family.validate(np.array([[1, 2, 0], [0, 0, 4]]), domain, "m")
    # a record with no trials is valid (0 ≤ m ≤ M)
    family.validate(np.array([[0, 0, 0], [1, 2, 0]]), RecordDomain(3, 4, np.array([0, 3])), "m")
    with pytest.raises(InvalidPrivateDataError, match=r"^m: trials must be finite whole numbers$"):
        family.validate(np.array([[1, 1, 0]]), RecordDomain(3, 4, 2.5), "m")
    with pytest.raises(
        InvalidPrivateDataError, match=r"^m: counts must have shape \(n_records, 3\), got \(2, 2\)$"
    ):
        family.validate(np.array([[1, 2], [0, 4]]), domain, "m")
    with pytest.raises(InvalidPrivateDataError, match=r"^m: counts must have shape"):
        family.validate(np.array([1, 2, 0]), domain, "m")
    with pytest.raises(
        InvalidPrivateDataError,
        match=r"^m: 1 records whose counts do not sum to their number of trials. Nothing",
    ):
        family.validate(np.array([[1, 1, 0], [0, 0, 4]]), domain, "m")
    with pytest.raises(InvalidPrivateDataError, match=r"^m: 2 counts outside .*\[0, 4\]"):
        family.validate(np.array([[5, -1, 0], [0, 0, 4]]), RecordDomain(3, 4, 4), "m")
    with pytest.raises(InvalidPrivateDataError, match=r"^m: 1 trial counts outside"):
        family.validate(np.array([[1, 1, 0]]), RecordDomain(3, 4, np.array([5])), "m")
    with pytest.raises(InvalidPrivateDataError, match=r"^m: counts must be finite whole"):
        family.validate(np.array([[0.5, 2.5, 0]]), RecordDomain(3, 4, 3), "m")


def test_conjugate_link_validates_group_labels():
    def link(groups, data=(1, 0, 1), n_groups=2):
        return ConjugateLink(
            "y",
            "p",
            BetaBernoulli(),
            np.asarray(data),
            None if groups is None else np.asarray(groups),
            n_groups,
            RecordDomain(2),
        )

    link(None).validate()
    link([0, 1, 1]).validate()
    link([0.0, 1.0, 1.0]).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 group labels outside .*\[0, 1\]"):
        link([0, 2, 1]).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 group labels outside"):
        link([0, -1, 1]).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: group labels must be finite whole"):
        link([0, 0.5, 1]).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 2 group labels for 3 records$"):
        link([0, 1]).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 outcomes outside"):
        link([0, 1, 1], data=(1, 2, 0)).validate()
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 2 group labels for 1 records$"):
        link([0, 1], data=1).validate()


def test_declared_bounds():
    scalar = declared_bounds((0, 5), "y", "counts")
    assert scalar == (0.0, 5.0) and all(type(v) is float for v in scalar)
    low, high = declared_bounds(([0, 1], 2), "X", "covariates", width=2)
    assert low.tolist() == [0.0, 1.0] and high.tolist() == [2.0, 2.0]
    assert low.dtype == np.float64 and high.dtype == np.float64
    low, high = declared_bounds((0, 1), "X", "covariates", width=3)
    assert low.tolist() == [0.0] * 3 and high.tolist() == [1.0] * 3
    with pytest.raises(
        ValueError,
        match=r"^data_bounds\['y'\] must be a pair \(low, high\) for "
        r"its counts, got 5$",
    ):
        declared_bounds(5, "y", "counts")
    with pytest.raises(ValueError, match=r"^data_bounds\['y'\] must be a pair"):
        declared_bounds((1, 2, 3), "y", "counts")
    with pytest.raises(ValueError, match=r"^data_bounds\['y'\] must be two numbers, got "):
        declared_bounds(([0, 1], 2), "y", "counts")
    with pytest.raises(ValueError, match=r"^data_bounds\['y'\] must be two numbers"):
        declared_bounds((0, [1, 2]), "y", "counts")
    with pytest.raises(
        ValueError,
        match=r"^data_bounds\['X'\] must give one \(low, high\) or one "
        r"per column \(2\), got shapes \(3,\) and \(\)$",
    ):
        declared_bounds(([0, 0, 0], 1), "X", "covariates", width=2)
    with pytest.raises(ValueError, match=r"^data_bounds\['X'\] must give one"):
        declared_bounds((0, [[1, 1]]), "X", "covariates", width=2)
    for bad in ((1, 1), (2, 1), (0, math.inf), (math.nan, 1)):
        with pytest.raises(
            ValueError,
            match=r"^data_bounds\['y'\] must be finite with low < "
            r"high for its counts, got ",
        ):
            declared_bounds(bad, "y", "counts")
    with pytest.raises(ValueError, match=r"^data_bounds\['X'\] must be finite with low < high"):
        declared_bounds(([0, 1], [1, 1]), "X", "covariates", width=2)


def test_check_bounded_values():
    np.testing.assert_array_equal(check_bounded_values([0, 1], 0, 1, "v", "w", False), [0, 1])
    np.testing.assert_array_equal(check_bounded_values([-1, 3], 0, 1, "v", "w", True), [0, 1])
    with pytest.raises(
        InvalidPrivateDataError,
        match=(
            r"^v: 2 w are NaN or infinite; private records must be complete and finite "
            r"\(pymc_dp never imputes or clamps them\)\. Nothing was released\.$"
        ),
    ):
        check_bounded_values([np.nan, np.inf, 0.5], 0, 1, "v", "w", True)
    with pytest.raises(
        InvalidPrivateDataError,
        match=(
            r"^v: 2 w outside the declared data_bounds\. Fix the bounds \(chosen without looking "
            r"at the data\) or opt in to clamp_to_bounds=\['v'\]\. Nothing was released\.$"
        ),
    ):
        check_bounded_values([-0.1, 1.1, 0.5], 0, 1, "v", "w", False)
    per_column = check_bounded_values(
        [[0.0, 5.0]], np.array([0, 1]), np.array([1, 4]), "X", "c", True
    )
    np.testing.assert_array_equal(per_column, [[0.0, 4.0]])


def test_check_group_labels_and_unit_interval():
    assert check_group_labels(_poisson([1, 2])) is None
    assert check_group_labels(_poisson([1, 2], [[1], [0]], 2)).tolist() == [1, 0]
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 group labels outside .*\[0, 1\]"):
        check_group_labels(_poisson([1, 2], [0, 2], 2))
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 3 group labels for 2 records$"):
        check_group_labels(_poisson([1, 2], [0, 1, 1], 2))
    with pytest.raises(InvalidPrivateDataError, match=r"^y: group labels must be finite whole"):
        check_group_labels(_poisson([1, 2], [0, 0.5], 2))
    np.testing.assert_allclose(to_unit_interval([2.0, 3.0, 7.0], 2.0, 7.0), [0, 0.2, 1])
    np.testing.assert_allclose(
        to_unit_interval([[0.0, 1.0]], np.array([0.0, -1.0]), np.array([2.0, 1.0])), [[0, 1]]
    )


def test_bounded_families_validate_their_records():
    with pytest.raises(InvalidPrivateDataError, match=r"^y: counts must be finite whole numbers"):
        POISSON.records(_poisson([1.5]))
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 counts outside the declared"):
        POISSON.records(_poisson([9]))
    assert POISSON.records(_poisson([9, 3], clamp=("y",)))[0].tolist() == [8, 3]
    with pytest.raises(InvalidPrivateDataError, match=r"^x: 1 values outside the declared"):
        NORMAL.records(_normal([3.5]))
    assert NORMAL.records(_normal([[3.5, -3.0]], clamp=("x",)))[0].tolist() == [3.0, -2.0]
    with pytest.raises(InvalidPrivateDataError, match=r"^x: 1 values are NaN or infinite"):
        NORMAL.records(_normal([np.nan], clamp=("x",)))
    y, x = REGRESSION.records(_regression([5.0], [[3.0, 0.0]], clamp=("y", "X")))
    assert y.tolist() == [4.0] and x.tolist() == [[2.0, 0.0]]
    with pytest.raises(InvalidPrivateDataError, match=r"^y: 1 values outside"):
        REGRESSION.records(_regression([5.0], [[1.0, 0.0]], clamp=("X",)))
    with pytest.raises(InvalidPrivateDataError, match=r"^X: 1 covariate values outside"):
        REGRESSION.records(_regression([0.0], [[3.0, 0.0]], clamp=("y",)))
    with pytest.raises(
        InvalidPrivateDataError,
        match=r"^y: its covariates 'X' have shape \(2,\), expected \(1, 2\) \(one row per record\)",
    ):
        REGRESSION.records(_regression([0.0], [1.0, 0.0]))
    with pytest.raises(
        InvalidPrivateDataError, match=r"^y: its covariates 'X' have shape \(2, 2\)"
    ):
        REGRESSION.records(_regression([0.0], [[1.0, 0.0], [1.0, 0.0]]))
    with pytest.raises(
        InvalidPrivateDataError, match=r"^y: its covariates 'X' have shape \(1, 1\)"
    ):
        REGRESSION.records(_regression([0.0], [[1.0]]))


def test_clamping_and_bounds_in_words():
    structure = _regression([0.0], [[0.0, 0.0]], clamp=("y", "X")).structure
    assert structure.clamping() == "y to [-1, 4]; X to [(0, -1), (2, 1)] per column"
    assert structure.describe_bounds() == "y in [-1, 4]; X in [(0, -1), (2, 1)] per column"
    assert _regression([0.0], [[0.0, 0.0]], clamp=("X",)).structure.clamping() == (
        "X to [(0, -1), (2, 1)] per column"
    )
    assert _regression([0.0], [[0.0, 0.0]], clamp=("y",)).structure.clamping() == "y to [-1, 4]"
    assert _regression([0.0], [[0.0, 0.0]]).structure.clamping() == ""
    assert _normal([0.0]).structure.clamping() == ""
    assert _normal([0.0], clamp=("x",)).structure.describe_bounds() == "x in [-2, 3]"
    single = BoundedStructure(
        "y",
        REGRESSION,
        (0.0, 1.0),
        {},
        covariates="X",
        covariate_bounds=(np.zeros(1), np.full(1, 2.0)),
        clamp=frozenset({"X"}),
    )
    assert single.describe_bounds() == "y in [0, 1]; X in [0, 2] per column"
    assert single.clamping() == "X to [0, 2] per column"
    same = BoundedStructure(
        "y",
        REGRESSION,
        (0.0, 1.0),
        {},
        covariates="X",
        covariate_bounds=(np.zeros(2), np.ones(2)),
        clamp=frozenset({"X"}),
    )
    assert same.clamping() == "X to [0, 1] per column"


def test_conjugate_link_validates_records_against_its_domain():
    link = ConjugateLink(
        "c", "theta", DirichletCategorical(), np.array([0, 3]), None, 1, RecordDomain(3)
    )
    with pytest.raises(InvalidPrivateDataError, match=r"^c: 1 categories outside .*\[0, 2\]"):
        link.validate()


# --- tempered updates (the exponential mechanism's posterior at temperature T) -------------------
def test_tempered_parameters_divide_every_exponent_by_t():
    from pymc_dp.families.beta import beta_tempered_parameters
    from pymc_dp.families.dirichlet import dirichlet_tempered_parameters
    from pymc_dp.families.gamma import gamma_tempered_parameters
    from pymc_dp.families.normal import normal_tempered_parameters

    table = np.array([[3.0, 5.0], [0.0, 2.0]])
    a, b = beta_tempered_parameters((np.array(2.0), np.array(4.0)), table, 4)
    np.testing.assert_allclose(a, [(2 - 1 + 3) / 4 + 1, (2 - 1 + 0) / 4 + 1], rtol=1e-15)
    np.testing.assert_allclose(b, [(4 - 1 + 5) / 4 + 1, (4 - 1 + 2) / 4 + 1], rtol=1e-15)
    (alpha,) = dirichlet_tempered_parameters((np.array([1.0, 2.0]),), table, 2.0)
    np.testing.assert_allclose(alpha, [[(0 + 3) / 2 + 1, (1 + 5) / 2 + 1], [1, (1 + 2) / 2 + 1]])
    # Gamma(α, scale 1/β) × (Σy, n): shape (α − 1 + Σy)/T + 1, rate (β + n)/T
    shape, rate = gamma_tempered_parameters((np.array(3.0), np.array(0.5)), table, 2.0)
    np.testing.assert_allclose(shape, [(3 - 1 + 3) / 2 + 1, (3 - 1 + 0) / 2 + 1], rtol=1e-15)
    np.testing.assert_allclose(rate, [(2 + 5) / 2, (2 + 2) / 2], rtol=1e-15)
    # Normal(μ₀, σ₀) × (Σx/σ², n/σ²): P = 1/σ₀² + n/σ², mean (μ₀/σ₀² + Σx/σ²)/P, sd √(T/P)
    mean, sd = normal_tempered_parameters((np.array(1.0), np.array(2.0)), table, 3.0)
    precision = np.array([0.25 + 5.0, 0.25 + 2.0])
    np.testing.assert_allclose(mean, (np.array([0.25 + 3.0, 0.25]) / precision), rtol=1e-15)
    np.testing.assert_allclose(sd, np.sqrt(3.0 / precision), rtol=1e-15)


def test_tempered_draws_are_the_truncated_laws_on_the_given_bounds():
    from pymc_dp import truncated
    from pymc_dp.families.beta import beta_tempered_draw
    from pymc_dp.families.dirichlet import dirichlet_tempered_draw
    from pymc_dp.families.gamma import gamma_tempered_draw
    from pymc_dp.families.normal import normal_tempered_draw

    p1, p2 = np.array([2.0, 5.0]), np.array([3.0, 1.5])

    def rng():
        return np.random.default_rng(11)

    got = beta_tempered_draw((p1, p2), (0.1, 0.7), rng())
    np.testing.assert_array_equal(got, truncated.truncated_beta(p1, p2, 0.1, 0.7, rng()))
    assert np.all((got >= 0.1) & (got <= 0.7))
    got = gamma_tempered_draw((p1, p2), (0.5, 4.0), rng())
    np.testing.assert_array_equal(got, truncated.truncated_gamma(p1, p2, 0.5, 4.0, rng()))
    assert np.all((got >= 0.5) & (got <= 4.0))
    got = normal_tempered_draw((p1, p2), (-1.0, 2.5), rng())
    np.testing.assert_array_equal(got, truncated.truncated_normal(p1, p2, -1.0, 2.5, rng()))
    assert np.all((got >= -1.0) & (got <= 2.5))
    current = np.array([[0.3, 0.3, 0.4]])
    alpha = np.array([[2.0, 3.0, 1.5]])
    got = dirichlet_tempered_draw((alpha,), (0.05, 0.9), rng(), current.copy())
    expected = truncated.truncated_dirichlet_gibbs(current.copy(), alpha, 0.05, rng())
    np.testing.assert_array_equal(got, expected)
    assert np.all(got >= 0.05) and np.allclose(got.sum(axis=-1), 1.0)


def test_projection_keeps_feasible_second_moments_and_clips_the_sums_to_half_n():
    from pymc_dp.families.second_moments import project_second_moments

    # feasible: n = 4, Σu = 0.5, Σu² = 1 (centred 1 − 0.5²/4 = 0.9375 above the floor)
    np.testing.assert_allclose(project_second_moments([4.0, 0.5, 1.0], 1, 1e-9), [4, 0.5, 1])
    # n < 1 raised to 1, Σu < −n/2 clipped to −n/2; Σu² keeps its centred part 0.5 − 0.25
    np.testing.assert_allclose(project_second_moments([0.2, -0.8, 0.5], 1, 1e-9), [1, -0.5, 0.5])
    # Σu > n/2 is clipped to n/2 = 1: centred 0.5 − 1/2 = 0 is raised to the floor 0.1
    np.testing.assert_allclose(project_second_moments([2.0, 3.0, 0.5], 1, 0.1), [2, 1, 0.6])
    # two variables (a regression's x̃, ỹ): feasible exact statistics are kept
    exact = second_moment_statistics(np.array([[0.5, 1.0], [0.25, 0.0], [1.0, 0.5]]) - 0.5)
    np.testing.assert_allclose(project_second_moments(exact, 2, 1e-9), exact, rtol=1e-12)


# --- conjugate posterior (Foulds et al. 2016, eq. 11) --------------------------------------------
def test_conjugate_posterior_parameters_and_draws():
    table = np.array([[3.0, 1.0], [0.0, 2.0]])
    alpha, beta = BetaBernoulli().posterior_parameters((np.array(2.0), np.array(0.5)), table)
    np.testing.assert_array_equal(alpha, [5.0, 2.0])
    np.testing.assert_array_equal(beta, [1.5, 2.5])
    (concentration,) = DirichletCategorical().posterior_parameters((np.array([1.0, 0.5]),), table)
    np.testing.assert_array_equal(concentration, [[4.0, 1.5], [1.0, 2.5]])
    # one draw of Beta(α + n₊, β + n₋) from the given generator, kept inside (0, 1)
    draw = BetaBernoulli().posterior_draw(
        np.random.default_rng(4), (np.array(2.0), np.array(0.5)), table
    )
    np.testing.assert_array_equal(draw, np.random.default_rng(4).beta([5.0, 2.0], [1.5, 2.5]))
    tiny = BetaBernoulli().sample_posterior(
        np.random.default_rng(0), (np.full(4, 1e-300), np.full(4, 1.0))
    )
    assert np.all((tiny > 0) & (tiny < 1))
    near_one = BetaBernoulli().sample_posterior(
        np.random.default_rng(0), (np.full(4, 1.0), np.full(4, 1e-300))
    )
    assert np.all((near_one > 0) & (near_one < 1))
    # Dirichlet: normalised Gamma(α) draws of the given generator, never exactly 0
    draw = DirichletCategorical().posterior_draw(
        np.random.default_rng(6), (np.array([1.0, 0.5]),), table
    )
    gammas = np.random.default_rng(6).standard_gamma([[4.0, 1.5], [1.0, 2.5]])
    np.testing.assert_allclose(draw, gammas / gammas.sum(axis=-1, keepdims=True), rtol=1e-15)
    small = DirichletCategorical().sample_posterior(
        np.random.default_rng(0), (np.full((3, 3), 1e-3),)
    )
    assert np.all(small > 0) and np.allclose(small.sum(axis=-1), 1.0)


# --- the noise-aware likelihood of released second moments, Gaussian noise --------------------
@pytest.mark.parametrize("public", [True, False])
def test_gaussian_noise_release_density_is_the_normal_convolution(public):
    """MvNormal(n·E t_R, n·Cov t_RR + σ²I) over the released components other than n
    (docstring of ``gaussian_release_log_likelihood``); a private n is latent,
    n = b·softplus(u + r/b) with b = σ/c₀ and r = r₀/c₀ in counts, and the density of u is
    the count's release Normal(n, b²) at r times the Jacobian sigmoid(u + r/b): a flat prior
    on n > 0 (``latent_record_count``), with no wall at n = 0."""
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_dp.families.second_moments import (
        gaussian_release_log_likelihood,
        gaussian_second_moments,
    )

    m, s, sigma = -0.1, 0.15, 0.7
    mean_t, cov_t = gaussian_second_moments(np.array([m]), np.array([[s**2]]), 1)
    mean_t, cov_t = mean_t.eval(), cov_t.eval()
    weights = np.array([0.5, 2.0, 3.0])  # the release is c ⊙ T + noise
    released = np.array([[190.0, -41.0, 30.0]])
    with pm.Model() as model:
        loglik = gaussian_release_log_likelihood(
            "x",
            pt.as_tensor(mean_t),
            pt.as_tensor(cov_t),
            pt.as_tensor(released if not public else released[:, 1:]),
            np.array([1, 2]) if public else np.array([0, 1, 2]),
            weights,
            pt.as_tensor(sigma),
            pt.as_tensor(np.array([200.0])) if public else None,
            noise="gaussian",
        )
    if public:
        assert model.free_RVs == []
        n, value = 200.0, float(loglik.eval())
    else:
        assert [v.name for v in model.free_RVs] == ["x_n_records_offset"]
        r, b = 190.0 / weights[0], sigma / weights[0]  # the count's release, in counts

        def count(u):
            return b * np.logaddexp(0.0, u + r / b)

        # Gaussian noise: the count's release is Normal(n, b²) at r, times the Jacobian
        logp = model.compile_logp(sum=True)
        for u in (-300.0, -2.0, 0.8, 1.5):
            expected_u = stats.norm.logpdf((count(u) - r) / b) - np.logaddexp(0.0, -u - r / b)
            got = logp({"x_n_records_offset": np.array([u])})
            assert got - expected_u == pytest.approx(0.5 * np.log(2 * np.pi), abs=1e-9)  # constant
        assert 0 < count(-300.0) < 1e-9  # far below the release: n near 0, never ≤ 0
        offset = 1.5
        n = count(offset)
        [graph] = model.replace_rvs_by_values([loglik])
        density = model.compile_fn(graph, point_fn=False, inputs=model.value_vars)
        assert np.isfinite(float(density(np.array([-280.0]))))  # no wall at n = 0
        value = float(density(np.array([offset])))
    c = weights[1:]
    cov = np.outer(c, c) * n * cov_t[1:, 1:] + sigma**2 * np.eye(2)
    expected = stats.multivariate_normal(c * n * mean_t[1:], cov).logpdf(released[0, 1:])
    assert value == pytest.approx(expected, rel=1e-9)


def test_poisson_plugin_likelihood_is_minus_infinity_off_the_positive_rates():
    import pytensor.tensor as pt

    structure = _poisson([1]).structure
    for rate, table in ((-1.0, [[3.0, 0.25]]), (0.0, [[3.0, 0.0]]), (0.0, [[3.0, 0.25]])):
        value = POISSON.plugin_log_likelihood(
            {"rate": pt.as_tensor(rate)}, pt.as_tensor(np.array(table)), structure
        )
        assert float(value.eval()) == -np.inf
    # inside: Σy·log λ − n·λ with Σy = 8 · 0.25 = 2, n = 3, λ = 1.5
    value = POISSON.plugin_log_likelihood(
        {"rate": pt.as_tensor(1.5)}, pt.as_tensor(np.array([[3.0, 0.25]])), structure
    )
    assert float(value.eval()) == pytest.approx(2 * math.log(1.5) - 3 * 1.5)


@pytest.mark.parametrize("released", [-3.0, 0.4, 25.0, 1e4])
def test_latent_record_count_is_a_flat_prior_on_positive_counts_times_the_laplace_release(
    released,
):
    """n = b·softplus(u + r/b): the density of u is Laplace(r − n; b) · dn/du, so that n has
    the density of the release Laplace(r | n, b) under a flat prior on n > 0, exactly. Checked
    by the change of variables at several u, and by the mass the sampled variable gives to
    intervals of n (quadrature in u against the truncated Laplace's mass in n)."""
    import pymc as pm
    from scipy import integrate

    from pymc_dp.families.bounded import latent_record_count

    b = 2.0
    with pm.Model() as model:
        n_var = latent_record_count("x", np.array([released]), b, 1)
    logp = model.compile_logp(sum=True)
    [n_graph] = model.replace_rvs_by_values([n_var])
    count = model.compile_fn(n_graph, point_fn=False, inputs=model.value_vars)

    def log_density(u):
        return logp({"x_n_records_offset": np.array([u])})

    for u in (-40.0, -1.0, 0.0, 3.0):
        n = float(count(np.array([u]))[0])
        assert n == pytest.approx(b * np.logaddexp(0.0, u + released / b), rel=1e-12)
        assert n > 0
        jacobian = b / (1.0 + np.exp(-(u + released / b)))
        expected = stats.laplace(released, b).logpdf(n) + np.log(jacobian)
        # constants dropped by the model: log(2b) of the Laplace, −log b of the Jacobian
        assert log_density(u) - expected == pytest.approx(np.log(2.0), abs=1e-9)
    # the mass of n in [lo, hi] under the sampled variable equals the truncated Laplace's
    truncated = stats.laplace(released, b)
    total = truncated.sf(0.0)
    bounds = np.array([1e-6, 0.5, 2.0, max(released, 3.0), max(released, 3.0) + 5.0])
    # u = softplus⁻¹(n/b) − r/b, with softplus⁻¹(y) = y + log(−expm1(−y))
    u_of = bounds / b + np.log(-np.expm1(-bounds / b)) - released / b

    def density(u):
        return np.exp(log_density(u))

    centre = float(u_of[-2])
    norm = integrate.quad(density, -80.0, centre, limit=200)[0]
    norm += integrate.quad(density, centre, centre + 80.0, limit=200)[0]
    for j in range(bounds.size - 1):
        mass = integrate.quad(density, u_of[j], u_of[j + 1], limit=200)[0] / norm
        exact = (truncated.cdf(bounds[j + 1]) - truncated.cdf(bounds[j])) / total
        assert mass == pytest.approx(exact, abs=1e-6)
