"""Tests that kill the surviving mutants of ``pymc_dp.mechanisms.statistics``
(docs/mutation_testing.md).

Expected values come from the module docstring's closed forms: per-group sums of S(x); L1
sensitivity C, 2C or C (one released component), L2 sensitivity C, √2·C or C; the NumPy
backend's release is the exact statistic plus the generator's own ``laplace(0, Δ/ε)`` draws
(:func:`pymc_dp.mechanisms.laplace.release_laplace`, pinned by
``tests/mechanisms/test_release_contract.py``); the projection clamps counts at 0 (and the one
released component to [0, total]).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp import (
    BudgetExceededError,
    InvalidPrivateDataError,
    NonPrivateModelError,
    PrivacyLedger,
)
from pymc_dp.families import (
    BOUNDED_FAMILIES,
    BetaBernoulli,
    BetaBinomial,
    BoundedLink,
    BoundedStructure,
    DirichletCategorical,
    DirichletMultinomial,
    RecordDomain,
)
from pymc_dp.families.base import ConjugateLink
from pymc_dp.mechanisms.gaussian import GAUSSIAN_SOURCE, gaussian_calibration
from pymc_dp.mechanisms.statistics import (
    BOUNDED_SOURCES,
    project_bounded,
    release_all,
    release_bounded,
    release_sufficient_statistics,
    released_components,
    sufficient_statistics,
    sufficient_statistics_l2_sensitivity,
    sufficient_statistics_sensitivity,
)

SOURCE = "Foulds et al. 2016, §3.2, eq. (16)-(17); Laplace mechanism eq. (3)"
POISSON = BOUNDED_FAMILIES["poisson"]
SEEDS = range(12)


def bernoulli(data, groups=None, n_groups=1, truncation=None):
    return ConjugateLink(
        "y",
        "p",
        BetaBernoulli(),
        np.asarray(data),
        None if groups is None else np.asarray(groups),
        n_groups,
        RecordDomain(2),
        truncation,
    )


def binomial(data, trials, max_trials, groups=None, n_groups=1):
    return ConjugateLink(
        "y",
        "p",
        BetaBinomial(),
        np.asarray(data),
        None if groups is None else np.asarray(groups),
        n_groups,
        RecordDomain(2, max_trials, trials),
    )


def categorical(data, k=3):
    return ConjugateLink(
        "c", "theta", DirichletCategorical(), np.asarray(data), None, 1, RecordDomain(k)
    )


def multinomial(counts, trials, max_trials):
    counts = np.asarray(counts)
    return ConjugateLink(
        "m",
        "theta",
        DirichletMultinomial(),
        counts,
        None,
        1,
        RecordDomain(counts.shape[1], max_trials, trials),
    )


def poisson(counts, groups=None, n_groups=1, bounds=(0, 4), clamp=()):
    structure = BoundedStructure(
        "y",
        POISSON,
        bounds,
        {},
        n_groups=n_groups,
        grouped=n_groups > 1,
        group_variable="g" if n_groups > 1 else "",
        clamp=frozenset(clamp),
    )
    return BoundedLink(
        structure, np.asarray(counts), groups=None if groups is None else np.asarray(groups)
    )


def laplace_draws(seed, scale, size):
    return np.random.default_rng(seed).laplace(0.0, scale, size=size)


# --- released components and sensitivities -----------------------------------------------------
CASES = [
    # link, neighbouring, released components, L1 Δ, L2 Δ
    (bernoulli([1, 0, 1]), "replace-one", 1, 1.0, 1.0),
    (bernoulli([1, 0, 1]), "add-remove-one", 2, 1.0, 1.0),
    (bernoulli([1, 0, 1], [0, 1, 1], 2), "replace-one", 2, 2.0, math.sqrt(2)),
    (binomial([2, 0, 5], 5, 5), "replace-one", 1, 5.0, 5.0),
    (binomial([2, 0, 5], 5, 5), "add-remove-one", 2, 5.0, 5.0),
    (binomial([2, 0, 3], np.array([3, 1, 4]), 4), "replace-one", 2, 8.0, 4 * math.sqrt(2)),
    (categorical([0, 2, 1]), "replace-one", 3, 2.0, math.sqrt(2)),
    (categorical([0, 2, 1]), "add-remove-one", 3, 1.0, 1.0),
    (multinomial([[1, 2], [3, 0]], 3, 3), "replace-one", 1, 3.0, 3.0),
    (multinomial([[1, 2, 0], [3, 0, 0]], 3, 6), "replace-one", 3, 12.0, 6 * math.sqrt(2)),
]


@pytest.mark.parametrize(("link", "neighbouring", "r", "l1", "l2"), CASES)
def test_released_components_and_sensitivities_are_the_closed_forms(link, neighbouring, r, l1, l2):
    assert released_components(link, neighbouring) == r
    assert sufficient_statistics_sensitivity(link, neighbouring) == pytest.approx(l1, rel=1e-15)
    assert sufficient_statistics_l2_sensitivity(link, neighbouring) == pytest.approx(l2, rel=1e-15)


def test_released_components_refuses_an_unknown_relation():
    with pytest.raises(ValueError, match=r"^neighbouring must be one of"):
        released_components(bernoulli([1]), "swap-one")


def test_sufficient_statistics_are_per_group_sums():
    link = bernoulli([1, 0, 1, 1, 0], [0, 1, 1, 0, 2.0], 3)  # float labels are whole numbers
    np.testing.assert_array_equal(sufficient_statistics(link), [[2, 0], [1, 1], [0, 1]])
    assert sufficient_statistics(link).dtype == np.float64
    np.testing.assert_array_equal(sufficient_statistics(bernoulli([1, 0, 1])), [[2, 1]])
    trials = binomial([2, 0, 3], np.array([3, 1, 4]), 4)
    np.testing.assert_array_equal(sufficient_statistics(trials), [[5, 3]])


# --- release_sufficient_statistics ---------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_one_component_release_of_a_bernoulli(seed):
    data = [1, 0, 1]
    ledger = PrivacyLedger()
    epsilon = 0.05  # b = 20 ≫ n = 3: the projection to [0, n] is exercised on both sides
    release = release_sufficient_statistics(
        bernoulli(data), epsilon, ledger=ledger, backend="numpy", rng=np.random.default_rng(seed)
    )
    expected = 2.0 + laplace_draws(seed, 1.0 / epsilon, 1)
    np.testing.assert_allclose(release.noisy, expected.reshape(1, 1), rtol=1e-15)
    first = np.clip(expected[0], 0.0, 3.0)
    np.testing.assert_allclose(release.table, [[first, 3.0 - first]], rtol=1e-15)
    np.testing.assert_array_equal(release.public_totals, [3.0])
    event = ledger.events[0]
    assert release.event is event and len(ledger) == 1
    assert (release.observed, release.prior, release.family) == ("y", "p", "beta-bernoulli")
    assert release.scale == event.noise_scale == 1.0 / epsilon
    assert release.neighbouring == "replace-one" and release.noise == "laplace"
    assert event.mechanism == "laplace" and event.epsilon == epsilon
    assert event.sensitivity == 1.0 and event.variables == ("y", "p")
    assert event.statistic == (
        "beta-bernoulli sufficient statistics first component (rest public), shape (1, 2)"
    )
    assert event.source == SOURCE


@pytest.mark.parametrize("seed", SEEDS)
def test_grouped_add_remove_release_is_the_clamped_noisy_table(seed):
    link = bernoulli([1, 0, 1, 1], [0, 1, 1, 0], 2)
    ledger = PrivacyLedger()
    release = release_sufficient_statistics(
        link,
        0.5,
        ledger=ledger,
        neighbouring="add-remove-one",
        backend="numpy",
        rng=np.random.default_rng(seed),
    )
    expected = np.array([[2.0, 0.0], [1.0, 1.0]]) + laplace_draws(seed, 2.0, 4).reshape(2, 2)
    np.testing.assert_allclose(release.noisy, expected, rtol=1e-15)
    np.testing.assert_allclose(release.table, np.maximum(expected, 0.0), rtol=1e-15)
    assert release.public_totals is None and release.neighbouring == "add-remove-one"
    event = ledger.events[0]
    assert event.sensitivity == 1.0 and event.neighbouring == "add-remove-one"
    assert event.statistic == "beta-bernoulli sufficient statistics table, shape (2, 2)"


def test_replace_one_with_private_trials_releases_the_table_at_twice_the_bound():
    link = binomial([2, 0, 3], np.array([3, 1, 4]), 4)
    ledger = PrivacyLedger()
    release = release_sufficient_statistics(
        link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(7)
    )
    expected = np.array([[5.0, 3.0]]) + laplace_draws(7, 8.0, 2).reshape(1, 2)
    np.testing.assert_allclose(release.noisy, expected, rtol=1e-15)
    assert release.public_totals is None
    assert ledger.events[0].sensitivity == 8.0 and release.scale == 8.0


def test_public_trials_total_is_records_times_trials():
    release = release_sufficient_statistics(
        binomial([2, 0, 5], 5, 5),
        1.0,
        ledger=PrivacyLedger(),
        backend="numpy",
        rng=np.random.default_rng(0),
    )
    np.testing.assert_array_equal(release.public_totals, [15.0])
    assert release.table.sum() == pytest.approx(15.0)


def test_a_truncated_prior_is_refused_before_any_charge():
    ledger = PrivacyLedger()
    with pytest.raises(
        NonPrivateModelError,
        match=(
            r"^p has a truncated prior: sample it with mechanism='ops' \(the Laplace path's "
            r"conjugate step draws untruncated posteriors\)$"
        ),
    ):
        release_sufficient_statistics(
            bernoulli([1, 0], truncation=(0.1, 0.9)), 1.0, ledger=ledger, backend="numpy"
        )
    assert len(ledger) == 0


def test_a_bad_record_is_refused_before_any_charge():
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError):
        release_sufficient_statistics(bernoulli([1, 2]), 1.0, ledger=ledger, backend="numpy")
    with pytest.raises(InvalidPrivateDataError):
        release_sufficient_statistics(
            bernoulli([1, 0], [0, 3], 2), 1.0, ledger=ledger, backend="numpy"
        )
    assert len(ledger) == 0


def test_noise_and_delta_are_checked_before_any_charge():
    ledger = PrivacyLedger()
    link = bernoulli([1, 0])
    with pytest.raises(
        ValueError,
        match=(
            r"^delta=1e-06 was given for a Laplace release, which is \(ε, 0\)-DP and spends no "
            r"δ; use noise='gaussian' to spend δ. Nothing was released.$"
        ),
    ):
        release_sufficient_statistics(link, 1.0, ledger=ledger, backend="numpy", delta=1e-6)
    with pytest.raises(ValueError, match=r"^noise must be one of"):
        release_sufficient_statistics(link, 1.0, ledger=ledger, backend="numpy", noise="cauchy")
    with pytest.raises(ValueError, match=r"^delta must satisfy 0 < delta < 1"):
        release_sufficient_statistics(link, 1.0, ledger=ledger, backend="numpy", noise="gaussian")
    assert len(ledger) == 0


def test_gaussian_release_uses_the_l2_sensitivity_of_the_full_table():
    ledger = PrivacyLedger()
    link = categorical([0, 2, 1, 1])
    release = release_sufficient_statistics(
        link,
        1.0,
        ledger=ledger,
        backend="numpy",
        rng=np.random.default_rng(3),
        noise="gaussian",
        delta=1e-6,
    )
    event = ledger.events[0]
    sigma = gaussian_calibration(math.sqrt(2), 1.0, 1e-6).scale
    assert event.mechanism == "gaussian" and event.delta == 1e-6
    assert event.sensitivity == pytest.approx(math.sqrt(2), rel=1e-15)
    assert (
        event.noise_scale == pytest.approx(sigma, rel=1e-12) and release.scale == event.noise_scale
    )
    assert event.source == f"{GAUSSIAN_SOURCE}; statistics: {SOURCE}"
    assert release.noise == "gaussian" and release.noisy.shape == (1, 3)
    one = release_sufficient_statistics(
        bernoulli([1, 0, 1]),
        1.0,
        ledger=ledger,
        backend="numpy",
        rng=np.random.default_rng(3),
        noise="gaussian",
        delta=1e-6,
    )
    assert ledger.events[1].sensitivity == 1.0 and one.noisy.shape == (1, 1)


# --- release_bounded ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_poisson_release_with_public_n(seed):
    link = poisson([0, 4, 2, 3])
    ledger = PrivacyLedger()
    epsilon = 0.5
    release = release_bounded(
        link, epsilon, ledger=ledger, backend="numpy", rng=np.random.default_rng(seed)
    )
    # one group, replace-one: n = 4 public, Σy/c = 9/4 released with Δ = 1
    noisy = 9 / 4 + laplace_draws(seed, 1.0 / epsilon, 1)
    np.testing.assert_allclose(release.noisy, noisy.reshape(1, 1), rtol=1e-15)
    np.testing.assert_array_equal(release.public_n, [4.0])
    np.testing.assert_allclose(release.table, [[4.0, np.clip(noisy[0], 0.0, 4.0)]], rtol=1e-15)
    event = ledger.events[0]
    assert release.event is event
    assert event.sensitivity == 1.0 and event.epsilon == epsilon and event.delta == 0.0
    assert event.variables == ("y",) and event.neighbouring == "replace-one"
    assert event.source == BOUNDED_SOURCES["poisson"] and event.clamping == ""
    assert event.statistic.endswith("; released shape (1, 1)")
    assert event.statistic.startswith(POISSON.describe(link.structure, "replace-one"))
    assert (release.observed, release.family, release.structure) == ("y", "poisson", link.structure)
    assert release.scale == 2.0 and release.neighbouring == "replace-one"
    assert release.noise == "laplace"
    assert release.released_index.tolist() == [1]
    assert release.component_names == ["n", "sum(y)/4"]
    assert release.group_variable == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_grouped_poisson_release_releases_n_at_delta_4(seed):
    link = poisson([0, 4, 2, 3], groups=[0, 1, 1, 0], n_groups=2)
    ledger = PrivacyLedger()
    release = release_bounded(
        link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(seed)
    )
    exact = np.array([[2.0, 3 / 4], [2.0, 6 / 4]])
    noisy = exact + laplace_draws(seed, 4.0, 4).reshape(2, 2)
    np.testing.assert_allclose(release.noisy, noisy, rtol=1e-15)
    assert release.public_n is None and release.group_variable == "g"
    n = np.maximum(noisy[:, 0], 0.0)
    np.testing.assert_allclose(
        release.table, np.column_stack([n, np.clip(noisy[:, 1], 0.0, n)]), rtol=1e-15
    )
    assert ledger.events[0].sensitivity == 4.0
    assert ledger.events[0].statistic.endswith("; released shape (2, 2)")


def test_add_remove_poisson_release_and_its_gaussian_variant():
    ledger = PrivacyLedger()
    link = poisson([0, 4, 2, 3])
    release = release_bounded(
        link,
        1.0,
        ledger=ledger,
        neighbouring="add-remove-one",
        backend="numpy",
        rng=np.random.default_rng(0),
    )
    assert release.public_n is None and release.noisy.shape == (1, 2)
    assert ledger.events[0].sensitivity == 2.0 and release.neighbouring == "add-remove-one"
    gauss = release_bounded(
        link,
        1.0,
        ledger=ledger,
        neighbouring="add-remove-one",
        backend="numpy",
        rng=np.random.default_rng(0),
        noise="gaussian",
        delta=1e-6,
    )
    event = ledger.events[1]
    assert event.mechanism == "gaussian" and gauss.noise == "gaussian"
    assert event.sensitivity == pytest.approx(math.sqrt(2), rel=1e-15)
    assert event.noise_scale == pytest.approx(
        gaussian_calibration(math.sqrt(2), 1.0, 1e-6).scale, rel=1e-12
    )
    assert event.source == f"{GAUSSIAN_SOURCE}; statistics: {BOUNDED_SOURCES['poisson']}"


def test_clamped_records_are_named_in_the_event():
    ledger = PrivacyLedger()
    link = poisson([0, 9, 2], clamp=("y",))
    release = release_bounded(
        link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(1)
    )
    event = ledger.events[0]
    assert event.clamping == "y to [0, 4]"
    assert event.statistic.endswith("; released shape (1, 1); records clamped: y to [0, 4]")
    np.testing.assert_allclose(release.noisy, 6 / 4 + laplace_draws(1, 1.0, 1).reshape(1, 1))


def test_release_bounded_validates_before_any_charge():
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError):
        release_bounded(poisson([0, 9]), 1.0, ledger=ledger, backend="numpy")
    with pytest.raises(ValueError, match=r"^neighbouring must be one of"):
        release_bounded(poisson([0, 1]), 1.0, ledger=ledger, neighbouring="x", backend="numpy")
    with pytest.raises(ValueError, match="was given for a Laplace release"):
        release_bounded(poisson([0, 1]), 1.0, ledger=ledger, backend="numpy", delta=0.1)
    assert len(ledger) == 0


def test_regression_release_names_the_covariates():
    regression = BOUNDED_FAMILIES["linear-regression"]
    structure = BoundedStructure(
        "y",
        regression,
        (-1.0, 1.0),
        {},
        covariates="X",
        covariate_bounds=(np.array([0.0]), np.array([1.0])),
    )
    link = BoundedLink(structure, np.array([0.5, -0.5]), covariates=np.array([[0.2], [0.9]]))
    ledger = PrivacyLedger()
    release_bounded(link, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(0))
    assert ledger.events[0].variables == ("y", "X")
    assert ledger.events[0].source == BOUNDED_SOURCES["linear-regression"]


def test_project_bounded_fills_in_a_public_n():
    structure = poisson([1]).structure
    np.testing.assert_allclose(
        project_bounded(structure, [[5.0]], 1.0, "replace-one", np.array([3.0])), [[3.0, 3.0]]
    )
    np.testing.assert_allclose(
        project_bounded(structure, [-1.0, 0.5], 1.0, "add-remove-one", None), [[0.0, 0.0]]
    )


# --- release_all -------------------------------------------------------------------------------
def test_release_all_splits_epsilon_and_delta_equally_and_dispatches_by_link():
    ledger = PrivacyLedger()
    links = [categorical([0, 2]), poisson([1, 2])]
    releases = release_all(
        links,
        1.0,
        ledger=ledger,
        backend="numpy",
        rng=np.random.default_rng(0),
        noise="gaussian",
        delta=1e-6,
    )
    assert [e.epsilon for e in ledger.events] == [0.5, 0.5]
    assert [e.delta for e in ledger.events] == [5e-7, 5e-7]
    assert releases[0].family == "dirichlet-categorical" and releases[1].family == "poisson"
    assert all(r.noise == "gaussian" for r in releases)
    assert ledger.events[1].source.endswith(BOUNDED_SOURCES["poisson"])


def test_release_all_takes_a_dict_and_passes_every_option():
    ledger = PrivacyLedger()
    links = [bernoulli([1, 0], [0, 1], 2), categorical([0, 1])]
    releases = release_all(
        links,
        {"y": 0.25, "c": 0.75},
        ledger=ledger,
        neighbouring="add-remove-one",
        backend="numpy",
        rng=np.random.default_rng(0),
    )
    assert [e.epsilon for e in ledger.events] == [0.25, 0.75]
    assert [e.delta for e in ledger.events] == [0.0, 0.0]
    assert all(r.neighbouring == "add-remove-one" for r in releases)
    assert all(e.noise_backend == "numpy" for e in ledger.events)


def test_release_all_is_all_or_nothing():
    links = [bernoulli([1, 0]), categorical([0, 1])]
    ledger = PrivacyLedger(budget=0.9)
    with pytest.raises(BudgetExceededError):
        release_all(links, 1.0, ledger=ledger, backend="numpy")
    assert len(ledger) == 0
    with pytest.raises(InvalidPrivateDataError):
        release_all([bernoulli([1, 0]), categorical([0, 5])], 0.5, ledger=ledger, backend="numpy")
    with pytest.raises(InvalidPrivateDataError):
        release_all([categorical([0, 1]), poisson([0, 9])], 0.5, ledger=ledger, backend="numpy")
    with pytest.raises(ValueError, match=r"^neighbouring must be one of"):
        release_all(links, 0.5, ledger=ledger, neighbouring="x", backend="numpy")
    with pytest.raises(ValueError, match="was given for a Laplace release"):
        release_all(links, 0.5, ledger=ledger, backend="numpy", delta=1e-6)
    gaussian_budget = PrivacyLedger(budget=(5.0, 1e-6))
    with pytest.raises(BudgetExceededError):
        release_all(
            links, 1.0, ledger=gaussian_budget, backend="numpy", noise="gaussian", delta=2e-6
        )
    assert len(ledger) == 0 and len(gaussian_budget) == 0


def test_defaults_are_opendp_laplace_replace_one():
    ledger = PrivacyLedger()
    bounded = release_bounded(poisson([0, 4, 2]), 1.0, ledger=ledger)
    conjugate = release_sufficient_statistics(bernoulli([1, 0, 1]), 1.0, ledger=ledger)
    both = release_all([categorical([0, 2]), poisson([1, 2])], 1.0, ledger=ledger)
    assert [e.noise_backend for e in ledger.events] == ["opendp"] * 4
    assert [e.mechanism for e in ledger.events] == ["laplace"] * 4
    assert [e.neighbouring for e in ledger.events] == ["replace-one"] * 4
    assert [e.delta for e in ledger.events] == [0.0] * 4
    assert bounded.noise == conjugate.noise == "laplace"
    assert bounded.public_n.tolist() == [3.0] and conjugate.public_totals.tolist() == [3.0]
    assert [r.neighbouring for r in both] == ["replace-one"] * 2


@pytest.mark.parametrize("neighbouring", ["add-remove-one", "replace-one"])
def test_normal_release_releases_n_only_under_add_remove(neighbouring):
    from pymc_dp.families.second_moments import project_second_moments

    normal = BOUNDED_FAMILIES["normal"]
    structure = BoundedStructure("x", normal, (0.0, 2.0), {})
    link = BoundedLink(structure, np.array([0.0, 1.0, 2.0]))
    ledger = PrivacyLedger()
    release = release_bounded(
        link,
        1.0,
        ledger=ledger,
        neighbouring=neighbouring,
        backend="numpy",
        rng=np.random.default_rng(5),
    )
    exact = np.array([3.0, 0.0, 0.5])  # (n, Σu, Σu²), u = x/2 − ½ = (−½, 0, ½)
    if neighbouring == "add-remove-one":  # all 3 released, weights share/range, Δ = 1
        weights = np.array([0.05 / 1.0, 0.95 * 0.3 / 0.5, 0.95 * 0.7 / 0.25])
        noisy = exact * weights + laplace_draws(5, 1.0, 3)
        full = noisy / weights
        assert release.public_n is None
    else:  # n public; weights (0.3, 2.8), Δ = (c₁ + c₂)²/(4c₂) = 3.1²/11.2
        weights = np.array([1.0, 0.3, 2.8])
        noisy = exact[1:] * weights[1:] + laplace_draws(5, 3.1**2 / 11.2, 2)
        full = np.concatenate([[3.0], noisy / weights[1:]])
        np.testing.assert_array_equal(release.public_n, [3.0])
    assert ledger.events[0].sensitivity == pytest.approx(
        1.0 if neighbouring == "add-remove-one" else 3.1**2 / 11.2, rel=1e-12
    )
    np.testing.assert_allclose(release.noisy, noisy[None, :], rtol=1e-12)
    floor = release.scale / weights[2]  # the noise scale of Σu²
    np.testing.assert_allclose(
        release.table, project_second_moments(full, 1, floor=floor)[None, :], rtol=1e-12
    )


def test_release_all_draws_every_release_from_the_given_generator_in_order():
    ledger = PrivacyLedger()
    links = [bernoulli([1, 0, 1]), categorical([0, 2])]
    releases = release_all(links, 1.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(9))
    generator = np.random.default_rng(9)
    first = 2.0 + generator.laplace(0.0, 1.0 / 0.5, size=1)  # one component, Δ = 1
    second = np.array([1.0, 0.0, 1.0]) + generator.laplace(0.0, 2.0 / 0.5, size=3)  # Δ = 2
    np.testing.assert_allclose(releases[0].noisy, first.reshape(1, 1), rtol=1e-15)
    np.testing.assert_allclose(releases[1].noisy, second.reshape(1, 3), rtol=1e-15)


def test_release_all_of_one_gaussian_link_spends_the_whole_delta():
    ledger = PrivacyLedger()
    release_all(
        [categorical([0, 2])],
        1.0,
        ledger=ledger,
        backend="numpy",
        rng=np.random.default_rng(0),
        noise="gaussian",
        delta=1e-6,
    )
    assert ledger.events[0].delta == 1e-6 and ledger.events[0].epsilon == 1.0


def test_release_all_refuses_two_links_of_one_observed_variable():
    """split_epsilon keys the shares by name: two links named alike would be checked as one
    against the budget and share one δ. Refused before anything is charged."""
    import pymc as pm

    from pymc_dp.analysis import recognise
    from pymc_dp.ledger import PrivacyLedger
    from pymc_dp.mechanisms.statistics import release_all

    with pm.Model() as model:
        pm.Bernoulli("y", p=pm.Beta("p", 1, 1), observed=np.array([0, 1, 1]))
    (link,) = recognise(model, "laplace").blocks.values()
    ledger = PrivacyLedger(budget=0.9)
    with pytest.raises(ValueError, match=r"several links named \['y'\]"):
        release_all([link, link], 1.0, ledger=ledger)
    assert len(ledger) == 0
