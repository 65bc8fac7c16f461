"""Closed-form Δ against brute force over records and a fine parameter grid (a test, never
the guarantee), and the refusals when a bound is missing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_dp.families.bounds import (
    bernoulli_log_likelihood_bound,
    binomial_log_likelihood_bound,
    categorical_log_likelihood_bound,
    multinomial_log_likelihood_bound,
    normal_log_likelihood_bound,
    poisson_log_likelihood_bound,
    private_trials_log_likelihood_bound,
)
from pymc_dp.theory import ops_temperature


def _brute(logpmf, records, thetas):
    """sup over θ of (max − min) over records of log Pr(record | θ), vectorised."""
    table = logpmf(np.asarray(records, float)[None, :], np.asarray(thetas, float)[:, None])
    return float(np.max(table.max(axis=1) - table.min(axis=1)))


def test_foulds_figure_1_temperature():
    # ε = 1, a0 = 0.2: T = 2 log 4 ≈ 2.77 (printed "2.7" in the paper)
    assert ops_temperature(bernoulli_log_likelihood_bound(0.2), 1.0) == pytest.approx(
        2 * math.log(4)
    )
    assert ops_temperature(bernoulli_log_likelihood_bound(0.2), 1.0) == pytest.approx(
        2.7726, abs=1e-4
    )


def test_categorical_matches_the_hmm_truncation_formula():
    # a0 = 1/(M K): Δ = log((M − 1) K + 1)
    for m, k in [(10, 2), (10, 9), (100, 4)]:
        assert categorical_log_likelihood_bound(1 / (m * k), k) == pytest.approx(
            math.log((m - 1) * k + 1)
        )


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 25), a0=st.floats(0.01, 0.45))
def test_binomial_matches_brute_force(n, a0):
    grid = np.linspace(a0, 1 - a0, 201)
    brute = _brute(lambda y, p: stats.binom.logpmf(y, n, p), range(n + 1), grid)
    assert binomial_log_likelihood_bound(n, a0) == pytest.approx(brute, rel=1e-9, abs=1e-9)
    if n == 1:
        assert binomial_log_likelihood_bound(1, a0) == pytest.approx(
            bernoulli_log_likelihood_bound(a0)
        )


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 30), low=st.floats(0.05, 5.0), width=st.floats(0.1, 20.0))
def test_poisson_matches_brute_force(m, low, width):
    grid = np.geomspace(low, low + width, 201)
    brute = _brute(lambda y, lam: stats.poisson.logpmf(y, lam), range(m + 1), grid)
    assert poisson_log_likelihood_bound(m, low, low + width) == pytest.approx(
        brute, rel=1e-9, abs=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(-5, 5),
    width=st.floats(0.1, 5),
    m_shift=st.floats(-6, 6),
    m_width=st.floats(0.0, 8),
    sigma=st.floats(0.2, 3),
)
def test_normal_matches_brute_force(a, width, m_shift, m_width, sigma):
    b, m_lo = a + width, a + m_shift
    m_hi = m_lo + m_width
    mus = np.unique(
        np.concatenate([np.linspace(m_lo, m_hi, 401), [v for v in (a, b) if m_lo <= v <= m_hi]])
    )
    xs = np.concatenate([np.linspace(a, b, 41), np.clip(mus, a, b)])  # nearest x to each μ
    brute = _brute(lambda x, mu: stats.norm.logpdf(x, mu, sigma), xs, mus)
    assert normal_log_likelihood_bound(a, b, m_lo, m_hi, sigma) == pytest.approx(
        brute, rel=1e-6, abs=1e-9
    )


def _brute_range(logpmf, records, thetas):
    """Range of log Pr(record | θ) over records and θ independently (grouped records)."""
    table = logpmf(np.asarray(records, float)[None, :], np.asarray(thetas, float)[:, None])
    return float(table.max() - table.min())


@settings(max_examples=30, deadline=None)
@given(
    m=st.integers(1, 30),
    m_low=st.integers(0, 5),
    low=st.floats(0.05, 5.0),
    width=st.floats(0.1, 20.0),
)
def test_grouped_poisson_matches_brute_force_and_exceeds_the_shared_bound(m, m_low, low, width):
    counts, high = range(min(m_low, m), m + 1), low + width
    grid = np.unique(np.concatenate([np.geomspace(low, high, 401), np.clip(counts, low, high)]))
    grouped = poisson_log_likelihood_bound(m, low, high, min_count=min(m_low, m), grouped=True)
    brute = _brute_range(stats.poisson.logpmf, counts, grid)
    assert grouped == pytest.approx(brute, rel=1e-9, abs=1e-9)
    shared = poisson_log_likelihood_bound(m, low, high, min_count=min(m_low, m))
    assert shared == pytest.approx(_brute(stats.poisson.logpmf, counts, grid))
    assert grouped >= shared - 1e-12


def test_grouped_poisson_example_is_larger_than_shared():
    # λ ∈ [1, 10], y ≤ 5: the shared bound cancels −λ (6.72); moving group does not (9.0)
    assert poisson_log_likelihood_bound(5, 1.0, 10.0) == pytest.approx(
        5 * math.log(10) - math.log(120)
    )
    assert poisson_log_likelihood_bound(5, 1.0, 10.0, grouped=True) == pytest.approx(-1.0 - (-10.0))


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(-5, 5),
    width=st.floats(0.1, 5),
    m_shift=st.floats(-8, 8),
    m_width=st.floats(0.0, 8),
    sigma=st.floats(0.2, 3),
)
def test_grouped_normal_matches_brute_force(a, width, m_shift, m_width, sigma):
    b, m_lo = a + width, a + m_shift
    m_hi = m_lo + m_width
    mus = np.concatenate([np.linspace(m_lo, m_hi, 401), np.clip([a, b], m_lo, m_hi)])
    xs = np.concatenate([np.linspace(a, b, 401), np.clip(mus, a, b)])
    brute = _brute_range(lambda x, mu: stats.norm.logpdf(x, mu, sigma), xs, mus)
    grouped = normal_log_likelihood_bound(a, b, m_lo, m_hi, sigma, grouped=True)
    assert grouped == pytest.approx(brute, rel=1e-6, abs=1e-9)
    assert grouped >= normal_log_likelihood_bound(a, b, m_lo, m_hi, sigma) - 1e-9


def _truncated_simplex_vertices(k, a0):
    return a0 + (1 - k * a0) * np.eye(k)


@pytest.mark.parametrize(("n", "k", "a0"), [(1, 3, 0.05), (4, 3, 0.1), (6, 2, 0.2), (3, 4, 0.01)])
def test_multinomial_matches_brute_force_without_the_base_measure(n, k, a0):
    rng = np.random.default_rng(0)
    inner = a0 + (1 - k * a0) * rng.dirichlet(np.ones(k), size=2000)
    thetas = np.vstack([inner, _truncated_simplex_vertices(k, a0)])
    records = np.array(
        [y for y in np.ndindex(*(n + 1,) * k) if sum(y) == n], dtype=float
    )  # every count vector with n trials
    utility = records @ np.log(thetas).T  # Σ_j y_j log θ_j, (records, thetas)
    brute = float(np.max(utility.max(axis=0) - utility.min(axis=0)))
    assert multinomial_log_likelihood_bound(n, a0, k) == pytest.approx(brute, rel=1e-12)
    assert float(utility.max() - utility.min()) == pytest.approx(brute)  # grouped: the same
    assert multinomial_log_likelihood_bound(1, a0, k) == pytest.approx(
        categorical_log_likelihood_bound(a0, k)
    )
    if k == 2:  # the paper's binomial bound keeps log h and is never smaller
        assert (
            binomial_log_likelihood_bound(n, a0)
            >= multinomial_log_likelihood_bound(n, a0, 2) - 1e-12
        )


@pytest.mark.parametrize(("m", "a0"), [(1, 0.1), (5, 0.05), (12, 0.3)])
def test_private_trials_matches_brute_force_with_the_base_measure(m, a0):
    grid = np.linspace(a0, 1 - a0, 201)
    log_p = [
        stats.binom.logpmf(y, trials, grid) for trials in range(m + 1) for y in range(trials + 1)
    ]
    brute = float(np.max(log_p) - np.min(log_p))
    assert private_trials_log_likelihood_bound(m, a0) == pytest.approx(brute, rel=1e-12)
    assert private_trials_log_likelihood_bound(m, a0) > binomial_log_likelihood_bound(
        m, a0
    )  # varying trials cost more


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bernoulli_log_likelihood_bound(0.0), "truncation"),
        (lambda: categorical_log_likelihood_bound(0.3, 4), "< 1/4"),
        (lambda: binomial_log_likelihood_bound(5, 0.0), "truncation"),
        (lambda: poisson_log_likelihood_bound(None, 1.0, 2.0), "unbounded counts"),
        (lambda: poisson_log_likelihood_bound(10, 0.0, 2.0), "rate is truncated"),
        (lambda: poisson_log_likelihood_bound(10, 1.0, math.inf), "rate is truncated"),
        (lambda: normal_log_likelihood_bound(-math.inf, 1.0, 0.0, 1.0, 1.0), "finite data bounds"),
        (lambda: normal_log_likelihood_bound(0.0, 1.0, None, 1.0, 1.0), "finite mean bounds"),
        (lambda: normal_log_likelihood_bound(0.0, 1.0, 0.0, 1.0, 0.0), "sigma"),
        (lambda: poisson_log_likelihood_bound(5, 1.0, 2.0, min_count=6), "min_count"),
        (lambda: multinomial_log_likelihood_bound(0, 0.1, 3), "n_trials"),
        (lambda: multinomial_log_likelihood_bound(2, 0.0, 3), "truncation"),
        (lambda: private_trials_log_likelihood_bound(3, 0.0), "truncation"),
        (lambda: private_trials_log_likelihood_bound(0, 0.1), "max_trials"),
    ],
)
def test_missing_bounds_are_refused_with_the_bound_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=50, deadline=None)
@given(bound=st.floats(1e-3, 1e3), epsilon=st.floats(1e-3, 1e3))
def test_ops_epsilon_inverts_ops_temperature(bound, epsilon):
    from pymc_dp.theory import ops_epsilon

    assert ops_epsilon(bound, ops_temperature(bound, epsilon)) == pytest.approx(epsilon)
    with pytest.raises(ValueError, match="temperature"):
        ops_epsilon(bound, 0.0)


def test_each_family_module_owns_its_bounds_and_bounds_gathers_them():
    from pymc_dp.families import base, beta, bounds, dirichlet, gamma, normal

    homes = {
        "bernoulli_log_likelihood_bound": beta,
        "binomial_log_likelihood_bound": beta,
        "categorical_log_likelihood_bound": dirichlet,
        "multinomial_log_likelihood_bound": dirichlet,
        "poisson_log_likelihood_bound": gamma,
        "normal_log_likelihood_bound": normal,
        "private_trials_log_likelihood_bound": base,
    }
    assert set(bounds.__all__) == set(homes)
    for name, module in homes.items():
        assert getattr(bounds, name) is getattr(module, name), name


@pytest.mark.parametrize(
    ("old", "new", "args"),
    [
        ("bernoulli_delta", bernoulli_log_likelihood_bound, (0.2,)),
        ("binomial_delta", binomial_log_likelihood_bound, (5, 0.1)),
        ("categorical_delta", categorical_log_likelihood_bound, (0.05, 3)),
        ("multinomial_delta", multinomial_log_likelihood_bound, (4, 0.05, 3)),
        ("normal_delta", normal_log_likelihood_bound, (-2, 2, -1, 1, 1.0)),
        ("poisson_delta", poisson_log_likelihood_bound, (5, 1.0, 10.0)),
        ("private_trials_delta", private_trials_log_likelihood_bound, (3, 0.1)),
    ],
)
def test_old_delta_names_are_deprecated_aliases_in_the_shim_only(old, new, args):
    import pymc_dp.families.bounds as bounds
    import pymc_dp.likelihood_bounds as shim

    assert not hasattr(bounds, old)  # "delta" is only ever the DP δ in the package
    with pytest.warns(DeprecationWarning, match=new.__name__):
        assert getattr(shim, old)(*args) == new(*args)
    assert getattr(shim, new.__name__) is new
