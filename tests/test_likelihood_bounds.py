"""Closed-form Δ against brute force over records and a fine parameter grid (a test, never
the guarantee), and the refusals when a bound is missing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_dp.likelihood_bounds import (
    bernoulli_delta,
    binomial_delta,
    categorical_delta,
    normal_delta,
    poisson_delta,
)
from pymc_dp.theory import ops_temperature


def _brute(logpmf, records, thetas):
    """sup over θ of (max − min) over records of log Pr(record | θ), vectorised."""
    table = logpmf(np.asarray(records, float)[None, :], np.asarray(thetas, float)[:, None])
    return float(np.max(table.max(axis=1) - table.min(axis=1)))


def test_foulds_figure_1_temperature():
    # ε = 1, a0 = 0.2: T = 2 log 4 ≈ 2.77 (printed "2.7" in the paper)
    assert ops_temperature(bernoulli_delta(0.2), 1.0) == pytest.approx(2 * math.log(4))
    assert ops_temperature(bernoulli_delta(0.2), 1.0) == pytest.approx(2.7726, abs=1e-4)


def test_categorical_matches_the_hmm_truncation_formula():
    # a0 = 1/(M K): Δ = log((M − 1) K + 1)
    for m, k in [(10, 2), (10, 9), (100, 4)]:
        assert categorical_delta(1 / (m * k), k) == pytest.approx(math.log((m - 1) * k + 1))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 25), a0=st.floats(0.01, 0.45))
def test_binomial_matches_brute_force(n, a0):
    grid = np.linspace(a0, 1 - a0, 201)
    brute = _brute(lambda y, p: stats.binom.logpmf(y, n, p), range(n + 1), grid)
    assert binomial_delta(n, a0) == pytest.approx(brute, rel=1e-9, abs=1e-9)
    if n == 1:
        assert binomial_delta(1, a0) == pytest.approx(bernoulli_delta(a0))


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 30), low=st.floats(0.05, 5.0), width=st.floats(0.1, 20.0))
def test_poisson_matches_brute_force(m, low, width):
    grid = np.geomspace(low, low + width, 201)
    brute = _brute(lambda y, lam: stats.poisson.logpmf(y, lam), range(m + 1), grid)
    assert poisson_delta(m, low, low + width) == pytest.approx(brute, rel=1e-9, abs=1e-9)


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
    assert normal_delta(a, b, m_lo, m_hi, sigma) == pytest.approx(brute, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bernoulli_delta(0.0), "truncation"),
        (lambda: categorical_delta(0.3, 4), "< 1/4"),
        (lambda: binomial_delta(5, 0.0), "truncation"),
        (lambda: poisson_delta(None, 1.0, 2.0), "unbounded counts"),
        (lambda: poisson_delta(10, 0.0, 2.0), "rate is truncated"),
        (lambda: poisson_delta(10, 1.0, math.inf), "rate is truncated"),
        (lambda: normal_delta(-math.inf, 1.0, 0.0, 1.0, 1.0), "finite data bounds"),
        (lambda: normal_delta(0.0, 1.0, None, 1.0, 1.0), "finite mean bounds"),
        (lambda: normal_delta(0.0, 1.0, 0.0, 1.0, 0.0), "sigma"),
    ],
)
def test_missing_bounds_are_refused_with_the_bound_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=50, deadline=None)
@given(delta=st.floats(1e-3, 1e3), epsilon=st.floats(1e-3, 1e3))
def test_ops_epsilon_inverts_ops_temperature(delta, epsilon):
    from pymc_dp.theory import ops_epsilon

    assert ops_epsilon(delta, ops_temperature(delta, epsilon)) == pytest.approx(epsilon)
    with pytest.raises(ValueError, match="temperature"):
        ops_epsilon(delta, 0.0)
