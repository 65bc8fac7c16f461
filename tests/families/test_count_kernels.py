"""The compiled latent-count sweeps (pymc_dp.families._count_kernels): exact invariance of the
posterior against enumeration (Laplace and Gaussian noise, public and private totals),
reproducibility from the caller's generator, and the window's proofs and fallback."""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from pymc_dp.families import _count_kernels as kernels
from pymc_dp.families import latent_counts
from pymc_dp.families.latent_counts import (
    DEFAULT_TOL,
    LatentCounts,
    cell_target,
    count_window,
    pair_target,
)


def _log_noise(noisy, counts, scale, noise):
    if noise == "laplace":
        return -np.abs(noisy - counts).sum(axis=1) / scale
    return -0.5 * (((noisy - counts) / scale) ** 2).sum(axis=1)


def _public_posterior(total, a, noisy, scale, noise):
    """Every table with sum ``total``: Dirichlet-multinomial × noise density, normalised."""
    support = np.array(
        [c for c in itertools.product(range(total + 1), repeat=len(a)) if sum(c) == total]
    )
    log_p = np.array([stats.dirichlet_multinomial.logpmf(c, a, total) for c in support])
    log_p = log_p + _log_noise(noisy, support, scale, noise)
    return support, np.exp(log_p - logsumexp(log_p))


def _private_posterior(a, noisy, scale, noise, size=60):
    """Tables on 0..size−1 per cell: the Poisson–Jeffreys total × Dirichlet-multinomial ×
    noise density (the mass beyond ``size`` is below e^(−40) for the cases used)."""
    support = np.array(list(itertools.product(range(size), repeat=len(a))))
    total = support.sum(axis=1)
    log_p = gammaln(total + 0.5) - gammaln(total + 1.0)
    # Dirichlet-multinomial pmf in closed form (scipy's, vectorised over the grid)
    log_p = log_p + gammaln(a.sum()) - gammaln(total + a.sum()) + gammaln(total + 1.0)
    log_p = log_p + np.sum(gammaln(support + a) - gammaln(a) - gammaln(support + 1.0), axis=1)
    log_p = log_p + _log_noise(noisy, support, scale, noise)
    return support, np.exp(log_p - logsumexp(log_p))


def _chi_square_p_value(states, support, probabilities):
    """Pearson's test of ``states`` (rows) against ``probabilities``; cells with expected
    count < 5 pooled."""
    index = {tuple(s): i for i, s in enumerate(support)}
    observed = np.bincount([index[tuple(s)] for s in states], minlength=len(support))
    expected = probabilities * len(states)
    order = np.argsort(expected)
    small = order[np.cumsum(expected[order]) < 5]
    big = np.setdiff1d(np.arange(len(support)), small)
    return stats.chisquare(
        np.r_[observed[big], observed[small].sum()], np.r_[expected[big], expected[small].sum()]
    ).pvalue


CHAINS = 4000


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("relation", ["replace-one", "add-remove-one"])
def test_a_sweep_leaves_the_exact_posterior_invariant(noise, relation):
    """Start CHAINS independent tables at exact draws of the enumerated posterior p(n | ñ);
    after one compiled sweep they must still follow it (Pearson's test at level 1e-3, fixed
    seed). Replace-one: public total 9, d = 3 (pair moves along a random cycle);
    add-remove-one: private total, d = 2 (cell moves)."""
    rng = np.random.default_rng(31 if noise == "laplace" else 32)
    if relation == "replace-one":
        total, a, noisy, scale = 9, np.array([0.6, 1.0, 2.5]), np.array([1.3, 5.2, 2.9]), 1.5
        support, probabilities = _public_posterior(total, a, noisy, scale, noise)
        totals = np.full(CHAINS, float(total))
    else:
        a, noisy, scale = np.array([1.0, 0.6]), np.array([3.2, 7.9]), 1.2
        support, probabilities = _private_posterior(a, noisy, scale, noise)
        totals = None
    start = support[rng.choice(len(support), size=CHAINS, p=probabilities)].astype(float)
    latent = LatentCounts(np.tile(noisy, (CHAINS, 1)), scale, start, totals, noise=noise)
    after = latent.sweep(rng, np.tile(a, (CHAINS, 1))).astype(int)
    if totals is not None:
        assert (after.sum(axis=1) == total).all()
    assert (after != start).any()  # the sweep moved
    assert _chi_square_p_value(after, support, probabilities) > 1e-3


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_a_move_draws_the_window_distribution_exactly(noise):
    """One pair move (d = 2: the draw ignores the current table) fed with stratified uniforms
    (i + 1/2)/N reproduces the window's CDF to within 1/N at every point: the inverse-CDF of the
    kernel is the conditional of :func:`pair_target` (a deterministic check, no sampling
    error)."""
    total, a_j, a_k, noisy_j, scale = 40.0, 0.7, 2.0, 11.3, 2.5
    target = pair_target(
        *[np.array([v]) for v in (total, a_j, a_k, noisy_j, math.nan, scale)], noise
    )
    lo, log_f = count_window(target)
    weights = np.exp(log_f[0] - logsumexp(log_f[0]))
    n = 20_000
    uniforms = (np.arange(n) + 0.5) / n
    counts = np.tile([[0.0, total]], (n, 1))
    kernels.pair_sweep(
        counts,
        np.tile([[a_j, a_k]], (n, 1)),
        np.full((n, 1), noisy_j),
        np.full(n, scale),
        noise == "gaussian",
        DEFAULT_TOL,
        uniforms,
    )
    assert (counts.sum(axis=1) == total).all()
    drawn = np.bincount((counts[:, 0] - lo[0]).astype(int), minlength=weights.size) / n
    np.testing.assert_allclose(np.cumsum(drawn), np.cumsum(weights), atol=1.0 / n + 1e-12)


@pytest.mark.parametrize("totals", [np.array([30.0, 12.0]), None])
def test_a_seed_reproduces_the_sweeps_and_the_kernel_holds_no_state(totals):
    noisy = np.array([[10.2, 13.1, 6.8], [2.5, 4.0, 5.9]])
    initial = np.array([[10.0, 13.0, 7.0], [3.0, 4.0, 5.0]])
    a = np.ones((2, 3))

    def run(seed):
        latent = LatentCounts(noisy, 2.0, initial, totals)
        rng = np.random.default_rng(seed)
        return np.array([latent.sweep(rng, a).copy() for _ in range(20)])

    first, again, other = run(5), run(5), run(6)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # the same uniforms give the same table, whatever ran before (no state in the kernel)
    uniforms = np.random.default_rng(9).random(2 + 2 * 3)
    sweep = kernels.pair_sweep if totals is not None else kernels.cell_sweep
    results = [
        sweep(initial.copy(), a, noisy, np.full(2, 2.0), False, DEFAULT_TOL, uniforms)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(*results)


def test_an_empty_pair_stays_empty():
    """m = 0: the window is the single point 0 (both tails empty), for any uniform."""
    counts = np.array([[0.0, 0.0], [5.0, 0.0]])
    kernels.pair_sweep(
        counts,
        np.ones((2, 2)),
        np.array([[30.0, -4.0], [4.0, 2.0]]),
        np.full(2, 3.0),
        False,
        DEFAULT_TOL,
        np.array([0.999999, 0.5]),  # d = 2: one uniform per row
    )
    np.testing.assert_array_equal(counts[0], [0.0, 0.0])
    assert counts[1].sum() == 5.0


# --- the window's bound: the log-Gamma-free proof and its exact fallback ----------------------
_TARGETS = [
    ("pair", (400.0, 0.3, 0.2, 50.0, math.nan)),  # U-shaped Beta-binomial: spikes at 0 and m
    ("pair", (400.0, 30.0, 2.0, 50.0, 320.0)),  # prior far from the release
    ("pair", (100_000.0, 1.0, 1.0, 30_000.4, 69_999.0)),
    ("pair", (60.0, 0.5, 0.3, -5.0, math.nan)),
    ("cell", (12.0, 0.4, 7.0, 50.0)),
    ("cell", (3.0, 90.0, 95.0, 50.0)),
    ("cell", (70_000.0, 1.0, 8.0, 30_001.3)),
    ("cell", (0.0, 0.05, 0.1, 2.0)),
]


def _target(kind, values, scale=2.0):
    arrays = [np.array([v]) for v in values]
    if kind == "pair":
        return pair_target(*arrays, np.array([scale]))
    return cell_target(*arrays, np.array([scale]))


def _brute_rise(target, start, end, slope, reference):
    x = np.arange(start, end + 1, dtype=np.float64)[None]
    phi = target.log_gamma_part(x)[0] + slope * x[0]
    return phi.max() - phi[int(reference - start)]


@pytest.mark.parametrize(("kind", "values"), _TARGETS)
@pytest.mark.parametrize("slope", [-0.6, -0.2, -0.02, 0.02, 0.2, 0.6])
def test_the_no_rise_proof_is_never_wrong_and_the_fallback_is_exact(kind, values, slope):
    """Wherever _no_rise claims Φ = log f_Γ + slope·x is largest at the reference end of an
    interval, brute force over every integer agrees (to rounding); where it cannot, sup_rise is
    still the exact maximum. Both directions (right tails: falling, left tails: rising) on
    intervals near 0, in the middle and at the top of the support."""
    target = _target(kind, values)
    top = float(target.upper[0]) if np.isfinite(target.upper[0]) else 20_000.0
    proven = 0
    for start, end in [(0.0, 37.0), (37.0, top), (0.0, top), (top - 5.0, top)]:
        args = (target.num[0], target.den[0], slope)
        falling = kernels._no_rise(*args, start, end - 1.0, False)  # Φ largest at start
        rising = kernels._no_rise(*args, start, end - 1.0, True)  # Φ largest at end
        for claimed, reference in ((falling, start), (rising, end)):
            brute = _brute_rise(target, start, end, slope, reference)
            exact = kernels.sup_rise(
                target.shift[0], target.sigma, target.num[0], target.den[0],
                start, end, slope, reference,
            )  # fmt: skip
            assert exact == pytest.approx(brute, abs=1e-9)
            if claimed:
                proven += 1
                assert brute <= 1e-9
    if kind == "pair" and values[1] < 1 and values[2] < 1 and slope > 0:
        assert proven < 8  # a U-shaped target with a rising slope is not proven flat


def test_the_proof_skips_log_gamma_on_the_benchmark_targets():
    """The usual case (flat prior, large counts, b = 2): both tails of the first window are
    proven without the exact maximum, and the window is just 2·w0 + 1 wide."""
    for kind, values in [
        ("pair", (100_000.0, 1.0, 1.0, 30_001.3, 69_998.0)),
        ("cell", (70_000.0, 1.0, 8.0, 30_001.3)),
    ]:
        target = _target(kind, values)
        lo, log_f = count_window(target)
        width = int(np.isfinite(log_f).sum())
        hi = lo[0] + width - 1
        row = (target.kink[0], target.weight[0], target.quadratic[0])
        right = 0.5 * (kernels.log_noise(hi + 1, *row) - kernels.log_noise(hi, *row))
        left = 0.5 * (kernels.log_noise(lo[0] - 1, *row) - kernels.log_noise(lo[0], *row))
        args = (target.num[0], target.den[0])
        assert kernels._no_rise(*args, right, hi, target.upper[0] - 1.0, False)
        assert kernels._no_rise(*args, -left, 0.0, lo[0] - 1.0, True)
        w0 = math.ceil(2.0 * (math.log(2 / DEFAULT_TOL) + 1)) + 2
        assert width <= 2 * w0 + 2


def test_the_route_announces_the_kernels_when_they_compile(caplog, monkeypatch):
    monkeypatch.setattr(latent_counts, "numba_needs_compiling", lambda *k: True)
    with caplog.at_level(logging.INFO, logger="pymc_dp"):
        latent_counts.announce_kernels()
    monkeypatch.setattr(latent_counts, "numba_needs_compiling", lambda *k: False)
    with caplog.at_level(logging.INFO, logger="pymc_dp"):
        latent_counts.announce_kernels()
    [record] = [r for r in caplog.records if r.name == "pymc_dp"]
    assert record.getMessage().startswith("Compiling the latent counts' numba kernels")


def test_announcing_compiles_every_kernel_so_the_next_run_is_quiet(monkeypatch):
    """Regression: a run that announced compiled only the kernels its case called, so every
    later run announced again for the others. After announcing, every entry point has a
    compiled signature in this process (and an index in numba's cache)."""
    monkeypatch.setattr(latent_counts, "numba_needs_compiling", lambda *k: True)
    latent_counts.announce_kernels()
    assert all(kernel.signatures for kernel in kernels.KERNELS)
