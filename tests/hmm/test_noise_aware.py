"""Noise-aware inference for the naive-Bayes HMM: exact latent counts, invariance, wiring."""

from __future__ import annotations

import functools
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import betaln, gammaln, logsumexp

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.hmm import release_cell_counts, simulate_records
from pymc_dp.hmm._kernels import (
    latent_count_log_marginal,
    noise_aware_loglik,
    noise_aware_marginal_loglik,
    sample_latent_counts,
)
from pymc_dp.hmm.evaluation import NOISE_AWARE, _tasks
from pymc_dp.hmm.gibbs import HMMData
from pymc_dp.hmm.noise_aware import (
    RATE_PRIOR_SHAPE,
    ReleasedCounts,
    _decreasing_root,
    initial_latent_state,
    noise_aware_sweep,
)
from pymc_dp.inference import DEFAULT_INFERENCE
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.hmm import run_hmm
from pymc_dp.steps import hmm_gibbs
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.hmm_gibbs import NaiveBayesHMMGibbs

# --- the latent-count conditional ------------------------------------------------------------


def _log_weights(mu, y, scale, support):
    """log of μ^c/c! · exp(−|y − c|/b) on ``support`` (the target, by brute force)."""
    return support * math.log(mu) - gammaln(support + 1) - np.abs(y - support) / scale


def _branch(mu, y, scale):
    """Which branch of ``latent_count_draw`` a case takes (its documented conditions)."""
    m = math.floor(y)
    if y <= 0:
        return "zero"
    if mu * math.exp(1 / scale) <= m + 0.5:
        return "lower Poisson"
    if mu * math.exp(-1 / scale) >= m + 0.5:
        return "upper Poisson"
    return "kink"


CASES = [  # (μ, y, b)
    (0.3, 0.0, 12.0),  # y clamped at 0: Poisson(μ e^{-1/b})
    (2.5, 0.0, 0.5),
    (1.2, 9.7, 12.0),  # lower piece, acceptance 1 below y
    (6.0, 4.3, 4.0),  # lower piece, some proposals above y
    (9.0, 2.2, 3.0),  # upper piece
    (0.4, 0.6, 1.2),  # upper piece (m = 0)
    (40.0, 41.5, 1.2),  # kink, geometric envelope
    (200.0, 210.4, 1.2),  # kink far from both Poisson means
    (60.0, 57.3, 25.0),  # kink with a loose envelope: exact window draw
]


def test_the_cases_cover_every_branch_of_the_draw():
    branches = {_branch(*case) for case in CASES}
    assert branches == {"zero", "lower Poisson", "upper Poisson", "kink"}


@pytest.mark.parametrize(("mu", "y", "scale"), CASES)
def test_latent_count_draws_match_the_enumerated_conditional(mu, y, scale):
    rng = np.random.default_rng(2018)
    n = 20_000
    m = math.floor(y)
    out = np.empty(n, dtype=np.int64)
    sample_latent_counts(
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.full(n, y),
        np.full(n, m, dtype=np.int64),
        np.full(n, math.exp(-(2 * m + 1 - 2 * y) / scale)),
        1 / scale,
        np.array([mu]),
        np.zeros(1, dtype=np.int64),
        np.ones((1, 1)),
        rng.random((n, 2)),
        out,
    )
    support = np.arange(int(mu + y + 60 * math.sqrt(mu + 1) + 60 * scale))
    log_w = _log_weights(mu, y, scale, support)
    p = np.exp(log_w - logsumexp(log_w))
    assert p[-1] < 1e-15  # the enumeration holds all the mass
    expected = n * p
    observed = np.bincount(out, minlength=support.size)[: support.size]
    assert observed.sum() == n
    keep = expected >= 5  # Pearson's chi-square: cells with >= 5 expected, the rest pooled
    observed = np.append(observed[keep], n - observed[keep].sum())
    expected = np.append(expected[keep], n - expected[keep].sum())
    if expected[-1] < 5:
        observed, expected = observed[:-1], expected[:-1]
    if observed.size == 1:  # a point mass (all draws in one value)
        assert observed[0] == n
        return
    chi2 = np.sum((observed - expected) ** 2 / expected)
    # 9 cases: family-wise level 1e-3 (Bonferroni); the seed is fixed
    assert stats.chi2.sf(chi2, observed.size - 1) > 1e-3 / len(CASES)


@pytest.mark.parametrize(("mu", "y", "scale"), [c for c in CASES if c[1] > 0])
def test_latent_count_log_marginal_is_the_enumerated_sum(mu, y, scale):
    m = math.floor(y)
    support = np.arange(int(mu + y + 60 * math.sqrt(mu + 1) + 60 * scale))
    exact = logsumexp(_log_weights(mu, y, scale, support)) - mu  # Σ_c Pois(c; μ) e^{−|y−c|/b}
    value = latent_count_log_marginal(
        mu,
        math.log(mu),
        y,
        m,
        math.exp(-(2 * m + 1 - 2 * y) / scale),
        1 / scale,
        math.exp(1 / scale),
    )
    assert value == pytest.approx(exact, rel=1e-12, abs=1e-12)


# --- the sweep ---------------------------------------------------------------------------------


def test_clamping_at_zero_loses_nothing_the_sweep_reads():
    """For y <= 0, exp(−|y − c|/b) ∝ exp(−c/b) for every c >= 0: both projections agree."""
    sim = simulate_records(3, 8, 2, [2, 3], 200, np.random.default_rng(1))
    runs = []
    for projection in ("cell", "none"):
        noisy = release_cell_counts(
            sim.counts,
            1.0,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=np.random.default_rng(2),
            projection=projection,
        )
        data = HMMData.from_tensor(noisy.counts, noisy.n_categories, 2)
        released = ReleasedCounts.from_data(data, 4.0)
        rng = np.random.default_rng(3)
        emission, latent = initial_latent_state(data, released, sim.states, rng)
        state = (sim.states, emission, sim.transition)
        for _ in range(5):
            *state, latent = noise_aware_sweep(data, released, *state, latent, rng)
        runs.append((noisy.counts.min(), *state, latent.rates))
    assert runs[0][0] == 0 and runs[1][0] < 0  # the releases differ ...
    for first, second in zip(runs[0][1:], runs[1][1:], strict=True):
        np.testing.assert_array_equal(first, second)  # ... the chains do not


def test_state_logliks_are_the_exact_marginals_up_to_a_constant():
    """Step 1 reads log p(c_P, y_Z | z = k, θ, λ) with the zero-valued counts summed out, or,
    collapsed, log p(y_P, y_Z | z = k, θ, λ) with every latent count summed out."""
    rng = np.random.default_rng(5)
    n_states, scale, rate = 3, 1.7, 4.2
    tensor = np.array([[[[2.3, 0.0, 0.0], [0.0, 4.1, 0.0]]]])  # 1 cell, 2 features
    data = HMMData.from_tensor(tensor, [3, 3], n_states)
    released = ReleasedCounts.from_data(data, scale)
    theta = rng.dirichlet(np.ones(3), size=(n_states, 2)).reshape(n_states, -1)
    counts = np.array([3, 5])  # latent counts of the two positive entries
    zero_mass, loglik = np.empty((1, n_states)), np.empty((1, n_states))
    noise_aware_loglik(
        released.zero_cell,
        released.zero_entry,
        released.cell,
        released.entry,
        counts,
        theta,
        np.log(theta),
        np.array([rate]),
        released.thinning,
        zero_mass,
        loglik,
    )
    collapsed = np.empty((1, n_states))
    noise_aware_marginal_loglik(
        released.zero_cell,
        released.zero_entry,
        released.cell,
        released.entry,
        released.value,
        released.floor,
        released.cross,
        1 / scale,
        theta,
        np.log(theta),
        np.array([rate]),
        zero_mass,
        collapsed,
    )
    support = np.arange(400)
    exact, exact_collapsed = [], []
    for k in range(n_states):
        mu = rate * theta[k]
        zero = sum(  # y = 0: Laplace factor exp(−c/b), c summed out
            logsumexp(stats.poisson.logpmf(support, mu[e]) - support / scale)
            for e in released.zero_entry
        )
        given = sum(
            stats.poisson.logpmf(c, mu[e]) for c, e in zip(counts, released.entry, strict=True)
        )
        summed = sum(
            logsumexp(stats.poisson.logpmf(support, mu[e]) - np.abs(y - support) / scale)
            for y, e in zip(released.value, released.entry, strict=True)
        )
        exact.append(zero + given)
        exact_collapsed.append(zero + summed)
    np.testing.assert_allclose(loglik[0] - loglik[0, 0], np.subtract(exact, exact[0]), atol=1e-10)
    np.testing.assert_allclose(collapsed[0], exact_collapsed, rtol=1e-10)


def test_initial_rates_solve_the_moment_equation():
    rng = np.random.default_rng(4)
    slope = rng.dirichlet(np.ones(5), size=30)
    target = rng.uniform(0, 40, size=30)
    half, shrink = 3.0, 1 - math.exp(-1 / 6.0)
    root = _decreasing_root(target, slope, half, shrink)
    value = root * slope.sum(1) + half * np.exp(-root[:, None] * slope * shrink).sum(1)
    at_zero = half * slope.shape[1]  # the left side at x = 0
    np.testing.assert_allclose(value[target > at_zero], target[target > at_zero], rtol=1e-10)
    assert np.all(root[target <= at_zero] == 0)


# Tiny HMM for the invariance test: 1 region × 2 time steps, K = 2, one feature with two
# categories; y = 0 marks a clamped entry (its latent count is integrated out by the sweep).
_Y = np.array([[3.4, 0.0], [0.6, 2.7]])
_SCALE, _ALPHA, _BETA = 0.8, 0.8, 0.9
_C = 40  # latent counts enumerated on 0.._C: the Laplace factor leaves < e^-40 beyond


@functools.cache
def _exact_posterior():
    """p(z, c | y) by enumeration, with A, θ and λ integrated out in closed form.

    With Σ_j θ_{k,j} = 1 and λ_i ~ Gamma(1/2, 0): ∫ λ^{-1/2} Π_j Pois(c_ij; λθ_j) dλ =
    Γ(N_i + 1/2) Π_j θ_j^{c_ij} / c_ij!; θ_k ~ Dirichlet(β) then gives B(β + S_k)/B(β), and A's
    rows (Dirichlet(α)) the Dirichlet-multinomial of the transition counts. Returns
    log p(z, c | y) as an array (4 state configurations z = 2 z_1 + z_2, then c_11, c_12, c_21,
    c_22 on 0.._C).
    """
    c = np.arange(_C + 1)
    s = np.arange(2 * _C + 1)
    log_beta = betaln(s[:, None] + _BETA, s[None, :] + _BETA) - betaln(_BETA, _BETA)
    a, b, d, e = np.ix_(c, c, c, c)  # c_11, c_12, c_21, c_22
    noise = (
        -(np.abs(_Y[0, 0] - a) + np.abs(_Y[0, 1] - b) + np.abs(_Y[1, 0] - d) + np.abs(_Y[1, 1] - e))
        / _SCALE
    )
    cells = (
        gammaln(a + b + RATE_PRIOR_SHAPE)
        + gammaln(d + e + RATE_PRIOR_SHAPE)
        - gammaln(a + 1)
        - gammaln(b + 1)
        - gammaln(d + 1)
        - gammaln(e + 1)
    )
    log_post = []
    for z in itertools.product(range(2), repeat=2):
        transitions = np.zeros((3, 2))
        transitions[0, z[0]] += 1
        transitions[1 + z[0], z[1]] += 1
        log_z = sum(betaln(*(transitions[r] + _ALPHA)) - betaln(_ALPHA, _ALPHA) for r in range(3))
        if z[0] == z[1]:  # one state holds both cells, the other none
            log_theta = log_beta[a + d, b + e]
        else:
            log_theta = log_beta[a, b] + log_beta[d, e]
        log_post.append(log_z + log_theta + cells + noise)
    log_post = np.array(log_post)
    return log_post - logsumexp(log_post)


def _batch_se(x, n_batches=50):
    """Monte Carlo standard error of the mean of an autocorrelated series (batch means)."""
    batches = np.array_split(np.asarray(x, dtype=float), n_batches)
    means = np.array([b.mean() for b in batches])
    return means.std(ddof=1) / math.sqrt(n_batches)


@pytest.mark.integration
@pytest.mark.parametrize("collapsed_states", [False, True])
def test_the_sweep_leaves_the_enumerated_posterior_invariant(collapsed_states):
    post = np.exp(_exact_posterior())  # (4 state configurations, C+1, C+1, C+1, C+1)
    edge = np.zeros(post.shape[1:], dtype=bool)
    for axis in range(4):
        index = [slice(None)] * 4
        index[axis] = _C
        edge[tuple(index)] = True
    assert post[:, edge].sum() < 1e-12  # the enumeration holds the whole posterior
    c = np.arange(_C + 1)
    z_exact = post.sum(axis=(1, 2, 3, 4))
    rate_exact = np.sum(post * (c[:, None] + c[None, :])[None, :, :, None, None]) + 0.5
    latent_exact = np.sum(post * c[None, :, None, None, None])  # E[c_11 | y], y_11 = 3.4

    tensor = _Y.reshape(1, 2, 1, 2)
    data = HMMData.from_tensor(tensor, [2], 2, alpha=_ALPHA, beta=_BETA)
    released = ReleasedCounts.from_data(data, _SCALE)
    assert released.zero_cell.tolist() == [0] and released.cell.tolist() == [0, 1, 1]
    rng = np.random.default_rng(2022)
    states = np.array([[0, 1]])
    emission, latent = initial_latent_state(data, released, states, rng)
    state = (states, emission, np.full((3, 2), 0.5))
    n_sweeps = 10_000
    config, rate, latent_count = [], [], []
    for _ in range(n_sweeps):
        *state, latent = noise_aware_sweep(
            data, released, *state, latent, rng, collapsed_states=collapsed_states
        )
        config.append(2 * state[0][0, 0] + state[0][0, 1])
        rate.append(latent.rates[0])  # λ_1: E[λ_1 | y] = E[c_11 + c_12 | y] + 1/2
        latent_count.append(latent.counts[0])
    # 5 Monte Carlo standard errors (batch means, for the chain's autocorrelation)
    for draws, exact in ((rate, rate_exact), (latent_count, latent_exact)):
        assert abs(np.mean(draws) - exact) < 5 * _batch_se(draws)
    config = np.asarray(config)
    for k in range(4):
        assert abs(np.mean(config == k) - z_exact[k]) < 5 * _batch_se(config == k) + 1e-3


# --- wiring: pymc_dp.sample, the step, the route, the evaluation ------------------------------


@pytest.fixture(scope="module")
def naive_bayes():
    """K = 1 (no label switching), one feature with a rare category, 20 records per cell."""
    rng = np.random.default_rng(7)
    n_regions, n_times, n_records = 6, 25, 3000
    sim = simulate_records(n_regions, n_times, 1, [3], n_records, rng)
    truth = np.array([0.85, 0.12, 0.03])
    category = rng.choice(3, size=n_records, p=truth)
    cell = rng.integers(0, n_regions * n_times, size=n_records)
    tensor = np.zeros(sim.counts.shape)
    np.add.at(tensor, (cell // n_times, cell % n_times, 0, category), 1.0)
    return sim.counts.with_counts(tensor), truth


def _sample(counts, inference, draws=100):
    return pymc_dp.sample(
        draws,
        tune=60,
        chains=1,
        model=naive_bayes_hmm(counts, 1),
        epsilon=2.0,
        noise_backend="numpy",
        noise_rng=np.random.default_rng(8),
        progressbar=False,
        random_seed=9,
        compute_convergence_checks=False,
        inference=inference,
    )


@pytest.mark.integration
def test_noise_aware_sample_is_the_same_release_and_removes_the_clamping_bias(naive_bayes):
    counts, truth = naive_bayes
    traces = {inference: _sample(counts, inference) for inference in ("plugin", "noise-aware")}
    events = [PrivacyLedger.from_datatree(t).events for t in traces.values()]
    assert all(len(e) == 1 for e in events)  # one release, nothing else charged
    plugin_event, aware_event = events[0][0], events[1][0]
    for field in ("mechanism", "epsilon", "sensitivity", "noise_scale", "statistic"):
        assert getattr(plugin_event, field) == getattr(aware_event, field)
    assert aware_event.noise_scale == pytest.approx(1.0)  # 2·D/ε
    released = [t["released_statistics"]["cell_counts"].values for t in traces.values()]
    np.testing.assert_array_equal(released[0], released[1])
    assert set(traces["plugin"].children) == set(traces["noise-aware"].children)
    rare = {k: t["posterior"]["emission_f0"].values[0, :, 0, 2] for k, t in traces.items()}
    # Clamping adds E[(b/2)e^{−c/b}] ≈ 0.34 to the rare category's expected count of 0.6 per
    # cell (b = 1): the plug-in posterior centres near θ ≈ 0.045, 4 of its own posterior sd
    # away from the truth 0.03; the noise-aware posterior must hold the truth within 4 sd
    aware, plugin = rare["noise-aware"], rare["plugin"]
    assert abs(aware.mean() - truth[2]) < 4 * aware.std()
    assert plugin.mean() - truth[2] > 4 * plugin.std()


@pytest.mark.integration
def test_inference_none_is_the_default_noise_aware_sampler(naive_bayes):
    counts, _ = naive_bayes
    default = _sample(counts, None, draws=5)
    aware = _sample(counts, "noise-aware", draws=5)
    plugin = _sample(counts, "plugin", draws=5)
    assert DEFAULT_INFERENCE == "noise-aware"
    assert default["released_statistics"].attrs["inference"] == "noise-aware"
    assert plugin["released_statistics"].attrs["inference"] == "plugin"
    values = {k: t["posterior"]["emission_f0"].values for k, t in [("d", default), ("a", aware)]}
    np.testing.assert_array_equal(values["d"], values["a"])
    assert not np.array_equal(values["d"], plugin["posterior"]["emission_f0"].values)


def test_tempered_mechanisms_and_the_collapsed_sampler_refuse_noise_aware_inference(naive_bayes):
    counts, _ = naive_bayes
    model = naive_bayes_hmm(counts, 1, truncation=10)
    for mechanism in ("ops", "gibbs-exponential"):
        ledger = PrivacyLedger()
        request = RunRequest(
            model=model,
            draws=5,
            mechanism=mechanism,
            epsilon=1.0,
            delta=0.0,
            neighbouring="replace-one",
            release=None,
            ledger=ledger,
            inference="plugin",
            sample_kwargs={"tune": 5, "chains": 1},
        )
        recognised = SimpleNamespace(blocks=model.pymc_dp_hmm)
        with pytest.raises(ValueError, match="takes no inference"):
            run_hmm(request, recognised)
        assert len(ledger) == 0
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="hmm_method='ffbs'"):
        pymc_dp.sample(
            5,
            tune=5,
            model=naive_bayes_hmm(counts, 1),
            epsilon=1.0,
            ledger=ledger,
            inference="noise-aware",
            hmm_method="collapsed",
            progressbar=False,
        )
    assert len(ledger) == 0  # refused before the release


def test_the_step_needs_a_laplace_release_and_restarts_its_auxiliaries_per_chain(
    naive_bayes, monkeypatch
):
    counts, _ = naive_bayes
    with naive_bayes_hmm(counts, 1), route_context():
        with pytest.raises(ValueError, match="Laplace release"):
            NaiveBayesHMMGibbs(inference="noise-aware")
        with pytest.raises(ValueError, match="inference must be one of"):
            NaiveBayesHMMGibbs(inference="aware")
    noisy = release_cell_counts(
        counts, 2.0, ledger=PrivacyLedger(), backend="numpy", rng=np.random.default_rng(1)
    )
    calls = []  # per sweep: (a chain starts, the state update is collapsed)
    starts = []
    initial, sweep = hmm_gibbs.initial_latent_state, hmm_gibbs.noise_aware_sweep

    def initial_spy(*args):
        starts.append(len(calls))
        return initial(*args)

    def sweep_spy(*args, collapsed_states):
        calls.append((len(calls) in starts, collapsed_states))
        return sweep(*args, collapsed_states=collapsed_states)

    monkeypatch.setattr(hmm_gibbs, "initial_latent_state", initial_spy)
    monkeypatch.setattr(hmm_gibbs, "noise_aware_sweep", sweep_spy)
    with naive_bayes_hmm(noisy, 1):  # released counts: post-processing, pm.sample may run it
        with pytest.raises(ValueError, match="collapsed_warmup is for"):
            NaiveBayesHMMGibbs(collapsed_warmup=2)
        step = NaiveBayesHMMGibbs(inference="noise-aware", collapsed_warmup=2)
        pm.sample(
            4,
            tune=2,
            chains=2,
            cores=1,
            step=step,
            progressbar=False,
            random_seed=3,
            compute_convergence_checks=False,
        )
    chain = [(True, True), (False, True), *[(False, False)] * 4]
    assert calls == chain + chain


def test_noise_aware_evaluation_fits_reuse_the_plugin_release():
    default = _tasks([0.1, 1.0], [1, 3], [10.0, 100.0], 2, 2016)
    chosen = _tasks(
        [0.1, 1.0],
        [1, 3],
        [10.0, 100.0],
        2,
        2016,
        ("non-private", "laplace"),
        ("plugin", "noise-aware"),
    )
    seeds = {
        (t.split, t.method, t.n_states, t.epsilon): t.seed
        for t in default
        if t.epsilon == t.epsilon
    }
    assert {t.method for t in chosen} == {"non-private", "laplace", NOISE_AWARE}
    for task in chosen:
        if task.method == NOISE_AWARE:
            assert task.seed == seeds[(task.split, "laplace", task.n_states, task.epsilon)]
        elif task.method == "laplace":
            assert task.seed == seeds[(task.split, task.method, task.n_states, task.epsilon)]
    assert len(chosen) == 2 * 2 * (1 + 2 * 2)
