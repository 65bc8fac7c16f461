"""Exact OPS for the truncated Beta–Bernoulli model: Foulds Fig. 1–2 and the ARE of §3.3."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.mechanisms.ops import beta_bernoulli_ops, tempered_beta_parameters
from pymc_dp.truncated import truncated_beta


def test_figure_1_temperature_and_the_ledger_event():
    ledger = PrivacyLedger()
    rng = np.random.default_rng(0)
    data = rng.binomial(1, 0.3, 20)
    theta = beta_bernoulli_ops(data, epsilon=1.0, truncation=0.2, ledger=ledger, rng=rng)
    (event,) = ledger.events
    assert 0.2 <= theta <= 0.8
    assert event.temperature == pytest.approx(2 * math.log(4))  # "T = 2.7" in the paper
    assert event.epsilon == pytest.approx(1.0) and not event.assumes_convergence


def test_large_epsilon_caps_the_temperature_and_charges_only_twice_the_bound():
    ledger = PrivacyLedger()
    beta_bernoulli_ops([1, 0, 1], epsilon=50.0, truncation=0.2, ledger=ledger)
    (event,) = ledger.events
    assert event.temperature == 1.0 and event.epsilon == pytest.approx(2 * math.log(4))


def test_bad_input_and_overspending_release_nothing():
    ledger = PrivacyLedger(budget=0.5)
    with pytest.raises(InvalidPrivateDataError, match=r"Bernoulli records must be"):
        beta_bernoulli_ops([1, np.nan], epsilon=0.1, truncation=0.1, ledger=ledger)
    with pytest.raises(InvalidPrivateDataError, match=r"Bernoulli records must be"):
        beta_bernoulli_ops([1, 2], epsilon=0.1, truncation=0.1, ledger=ledger)
    with pytest.raises(ValueError, match="truncation"):
        beta_bernoulli_ops([1, 0], epsilon=0.1, truncation=0.0, ledger=ledger)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        beta_bernoulli_ops([1, 0], epsilon=1.0, truncation=0.1, ledger=ledger)
    assert len(ledger) == 0


def _errors(n, repeats, rng, p=0.1, a0=0.05, epsilon=0.1):
    """Mean |θ̂ − p| of one OPS draw, one Laplace-posterior draw and one posterior draw."""
    temperature = 2 * math.log((1 - a0) / a0) / epsilon
    s = rng.binomial(n, p, repeats)
    a, b = tempered_beta_parameters(s, n, 1.0, 1.0, temperature)
    ops = truncated_beta(a, b, a0, 1 - a0, rng)
    noisy = np.clip(s + rng.laplace(0, 1 / epsilon, repeats), 0, n)  # sensitivity 1, N public
    laplace = rng.beta(noisy + 1, n - noisy + 1)
    exact = rng.beta(s + 1, n - s + 1)
    return [float(np.abs(x - p).mean()) for x in (ops, laplace, exact)]


def test_figure_2_laplace_overtakes_ops_and_reaches_the_posterior():
    # p = 0.1, a0 = 0.05, ε = 0.1, 1000 repeats (Foulds Fig. 2; prior Beta(1, 1), ours)
    rng = np.random.default_rng(2016)
    ops_10, laplace_10, _ = _errors(10, 1000, rng)
    assert abs(ops_10 - laplace_10) < 0.08  # comparable near N = 10 (paper: OPS slightly better)
    for n in (100, 1000):
        ops, laplace, exact = _errors(n, 1000, rng)
        assert laplace < 0.5 * ops
    ops, laplace, exact = _errors(10_000, 1000, rng)
    assert laplace == pytest.approx(exact, rel=0.15)  # Laplace → the true posterior's error


def test_asymptotic_relative_efficiency_at_n_1e5():
    # Foulds §3.3, Thms 4–5: one OPS draw ≈ 1 + T, a Laplace-posterior draw ≈ 2,
    # the Laplace posterior mean ≈ 1 (ARE = N·Var/(p(1 − p))), within 10%
    rng = np.random.default_rng(5)
    n, p, a0, epsilon, repeats = 100_000, 0.3, 0.05, 1.0, 4000
    temperature = 2 * math.log((1 - a0) / a0) / epsilon
    s = rng.binomial(n, p, repeats)
    ops = truncated_beta(*tempered_beta_parameters(s, n, 1.0, 1.0, temperature), a0, 1 - a0, rng)
    noisy = np.clip(s + rng.laplace(0, 1 / epsilon, repeats), 0, n)
    draw = rng.beta(noisy + 1, n - noisy + 1)
    mean = (noisy + 1) / (n + 2)

    def are(x):
        return n * np.mean((x - p) ** 2) / (p * (1 - p))

    assert are(ops) == pytest.approx(1 + temperature, rel=0.1)
    assert are(draw) == pytest.approx(2.0, rel=0.1)
    assert are(mean) == pytest.approx(1.0, rel=0.1)


def _ops_audit(epsilon_used, n_runs=20_000):
    rng = np.random.default_rng(9)
    d0, d1 = [1], [0]
    a0 = 0.1

    def draws(data):
        temperature = max(1.0, 2 * math.log((1 - a0) / a0) / epsilon_used)
        a, b = tempered_beta_parameters(sum(data), len(data), 1.0, 1.0, temperature)
        return truncated_beta(np.full(n_runs, a), b, a0, 1 - a0, rng)

    return epsilon_lower_bound(draws(d0), draws(d1), lambda t: t > 0.8, vectorized=True)


def test_audit_of_the_ops_draw_and_of_an_untempered_draw():
    assert _ops_audit(1.0) <= 1.0
    assert _ops_audit(20.0) > 1.4  # T = 1 where T = 2Δ/ε = 4.4 is needed: caught


def test_local_epsilon_matches_a_grid_over_theta():
    from pymc_dp.mechanisms.ops import beta_bernoulli_local_epsilon

    a0, temperature, s, n = 0.1, 2.0, 7, 9
    grid = np.linspace(a0, 1 - a0, 20_001)

    def log_density(successes):
        a, b = tempered_beta_parameters(successes, n, 1.0, 1.0, temperature)
        log_kernel = (a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid)
        log_z = np.log(np.trapezoid(np.exp(log_kernel - log_kernel.max()), grid)) + log_kernel.max()
        return log_kernel - log_z

    brute = max(np.abs(log_density(s) - log_density(t)).max() for t in (s - 1, s + 1))
    local = beta_bernoulli_local_epsilon(s, n, truncation=a0, temperature=temperature)
    assert local == pytest.approx(brute, rel=1e-4)


def test_figure_8_greedy_adversary_approaches_but_never_exceeds_twice_the_bound():
    from pymc_dp.mechanisms.ops import greedy_adversary

    bound = 2 * math.log(9)  # a0 = 0.1, T = 1: the worst case 2Δ
    path = greedy_adversary(300, truncation=0.1, temperature=1.0)
    assert np.all(path <= bound + 1e-9)
    assert path[0] < 0.6 * bound and path[-1] > 0.99 * bound
    assert path[:100].argmax() > 90 and path[200:].min() > 0.98 * bound  # climbs, then plateaus
    tempered = greedy_adversary(100, truncation=0.1, temperature=4.0)
    assert np.all(tempered <= bound / 4 + 1e-9)
