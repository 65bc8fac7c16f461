"""The naive-Bayes HMM: counts, samplers against exact posteriors, privacy, PyMC integration."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats
from scipy.special import gammaln

import pymc_dp
from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.hmm import (
    cell_counts,
    cell_counts_from_frame,
    cell_counts_sensitivity,
    log_likelihood_bound,
    ops_cost,
    ops_worst_case_epsilon,
    release_cell_counts,
    simulate_records,
)
from pymc_dp.hmm.gibbs import (
    HMMData,
    emission_counts,
    emission_log_likelihood,
    sweep,
    transition_counts,
    update_emission,
)
from pymc_dp.hmm.relabel import emission_profiles, modal_states, relabel_states
from pymc_dp.mechanisms.laplace import release_laplace
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.steps.guard import route_context
from pymc_dp.theory import ops_temperature
from pymc_dp.truncated import truncated_beta, truncated_dirichlet_gibbs

GRID = {"regions": ["a", "b"], "times": ["t0", "t1", "t2"], "features": ["x", "y"]}
CATEGORIES = [["p", "q"], ["u", "v", "w"]]


def _small_counts(records, region, time):
    return cell_counts(
        np.asarray(region), np.asarray(time), np.asarray(records), categories=CATEGORIES, **GRID
    )


# --- counts ---------------------------------------------------------------------------------


def test_cell_counts_match_a_direct_count():
    rng = np.random.default_rng(0)
    n = 500
    region, time = rng.integers(0, 2, n), rng.integers(0, 3, n)
    records = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n)])
    counts = _small_counts(records, region, time)
    expected = np.zeros((2, 3, 2, 3))
    for r, t, (x, y) in zip(region, time, records, strict=True):
        expected[r, t, 0, x] += 1
        expected[r, t, 1, y] += 1
    np.testing.assert_array_equal(counts.counts, expected)
    assert counts.counts[:, :, 0, 2].sum() == 0  # padded category of feature x
    np.testing.assert_array_equal(counts.cell_totals(), expected[:, :, 0].sum(-1))


@pytest.mark.parametrize(
    ("region", "time", "records", "message"),
    [
        ([0], [3], [[0, 0]], "time: 1 record has a code outside"),
        ([2], [0], [[0, 0]], "region: 1 record has a code outside"),
        ([-1], [0], [[0, 0]], "region: 1 record has a code outside"),
        ([0], [0], [[2, 0]], "feature 'x'"),
        ([0], [0], [[0, 3]], "feature 'y'"),
    ],
)
def test_codes_outside_the_declared_grid_or_domain_are_rejected(region, time, records, message):
    with pytest.raises(InvalidPrivateDataError, match=message):
        _small_counts(records, region, time)


def test_non_integer_codes_are_rejected():
    with pytest.raises(InvalidPrivateDataError, match="integers"):
        _small_counts(np.array([[0.5, 0]]), [0], [0])


def _frame(**overrides):
    frame = pd.DataFrame(
        {
            "where": ["a", "b", "b"],
            "when": ["t0", "t2", "t2"],
            "x": ["p", "q", "q"],
            "y": ["u", "w", "v"],
        }
    )
    return frame.assign(**overrides)


def _from_frame(frame):
    return cell_counts_from_frame(
        frame,
        region="where",
        time="when",
        features=["x", "y"],
        regions=GRID["regions"],
        times=GRID["times"],
        categories=dict(zip(GRID["features"], CATEGORIES, strict=True)),
    )


def test_cell_counts_from_frame_keeps_empty_cells():
    counts = _from_frame(_frame())
    assert counts.shape == (2, 3, 2, 3)
    assert counts.counts[1, 2, 0, 1] == 2 and counts.counts[1, 2, 1, 1] == 1
    assert counts.cell_totals()[0, 1] == 0  # empty cell stays in the grid
    labels = json.loads(counts.to_dataarray().attrs["categories"])
    assert labels == {"x": ["p", "q"], "y": ["u", "v", "w"]}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"x": ["p", "q", "zz"]}, "outside its declared domain"),
        ({"y": ["u", None, "v"]}, "missing values"),
        ({"when": ["t0", "t9", "t2"]}, "time column"),
    ],
)
def test_frame_values_outside_the_domain_are_rejected(override, message):
    with pytest.raises(InvalidPrivateDataError, match=message):
        _from_frame(_frame(**override))


@pytest.mark.parametrize(
    ("bad", "message"), [(np.nan, "NaN"), (-1.0, "negative"), (np.inf, "NaN or infinite")]
)
def test_bad_count_tensors_are_rejected_before_release(bad, message):
    counts = _small_counts([[0, 0]], [0], [0])
    tensor = counts.counts.copy()
    tensor[0, 0, 0, 0] = bad
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match=message):
        release_cell_counts(counts.with_counts(tensor), 1.0, ledger=ledger, backend="numpy")
    assert len(ledger) == 0


def test_counts_at_padded_categories_are_rejected():
    counts = _small_counts([[0, 0]], [0], [0])
    tensor = counts.counts.copy()
    tensor[0, 0, 0, 2] = 1
    with pytest.raises(InvalidPrivateDataError, match="outside its feature"):
        counts.with_counts(tensor)


# --- sensitivity (property test over neighbours) --------------------------------------------

record = st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 1), st.integers(0, 2))


@settings(max_examples=200, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), record, st.data())
def test_count_tensor_sensitivity_covers_every_neighbour(dataset, replacement, data):
    def tensor(rows):
        rows = np.asarray(rows).reshape(-1, 4)
        return _small_counts(rows[:, 2:], rows[:, 0], rows[:, 1]).counts

    index = data.draw(st.integers(0, len(dataset) - 1))
    replaced = [*dataset[:index], replacement, *dataset[index + 1 :]]
    removed = dataset[:index] + dataset[index + 1 :]
    base = tensor(dataset)
    assert np.abs(base - tensor(replaced)).sum() <= cell_counts_sensitivity(2, "replace-one")
    if removed:
        assert np.abs(base - tensor(removed)).sum() <= cell_counts_sensitivity(2, "add-remove-one")


def test_sensitivity_is_attained_by_a_record_that_moves_cells():
    before = _small_counts([[0, 0]], [0], [0]).counts
    after = _small_counts([[1, 2]], [1], [2]).counts
    assert np.abs(before - after).sum() == cell_counts_sensitivity(2) == 4


# --- Laplace release --------------------------------------------------------------------------


def test_release_charges_one_event_and_keeps_padding_zero():
    sim = simulate_records(3, 4, 2, [2, 3], 300, np.random.default_rng(1))
    ledger = PrivacyLedger()
    noisy = release_cell_counts(
        sim.counts, 2.0, ledger=ledger, backend="numpy", rng=np.random.default_rng(2)
    )
    (event,) = ledger.events
    assert (event.mechanism, event.epsilon, event.sensitivity) == ("laplace", 2.0, 4.0)
    assert event.noise_scale == pytest.approx(2.0)
    assert noisy.noisy and np.all(noisy.counts >= 0)
    assert np.all(noisy.counts[:, :, 0, 2] == 0)
    with pytest.raises(ValueError, match="already a private release"):
        release_cell_counts(noisy, 1.0, ledger=ledger, backend="numpy")


def test_release_noise_has_the_declared_scale():
    sim = simulate_records(20, 50, 2, [4, 4], 200_000, np.random.default_rng(3))
    noisy = release_cell_counts(
        sim.counts, 1.0, ledger=PrivacyLedger(), backend="numpy", rng=np.random.default_rng(4)
    )
    big = sim.counts.counts > 50  # far from the projection at 0
    residual = (noisy.counts - sim.counts.counts)[big]
    assert stats.kstest(residual, stats.laplace(scale=4.0).cdf).pvalue > 1e-3


def test_release_over_budget_releases_nothing():
    sim = simulate_records(2, 3, 1, [2], 30, np.random.default_rng(5))
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(BudgetExceededError, match=r"release of"):
        release_cell_counts(sim.counts, 2.0, ledger=ledger, backend="numpy")
    assert len(ledger) == 0


# --- samplers against exact posteriors --------------------------------------------------------


def _log_beta(a):
    return gammaln(a).sum(-1) - gammaln(a.sum(-1))


def _exact_state_posterior(data):
    """Pr(z | X) for every z, by enumeration with θ and A integrated out in closed form."""
    shape = (data.n_regions, data.n_times)
    configurations = [
        np.array(z).reshape(shape)
        for z in itertools.product(range(data.n_states), repeat=math.prod(shape))
    ]
    log_p = []
    for z in configurations:
        a = transition_counts(z, data.n_states) + data.alpha
        b = emission_counts(data, z)[:, :, : data.n_categories[0]] + data.beta
        log_p.append(_log_beta(a).sum() + _log_beta(b).sum())
    log_p = np.array(log_p)
    p = np.exp(log_p - log_p.max())
    return [tuple(z.ravel()) for z in configurations], p / p.sum()


@pytest.mark.integration
@pytest.mark.parametrize("method", ["ffbs", "collapsed"])
def test_samplers_reach_the_exact_state_posterior(method):
    rng = np.random.default_rng(11)
    tensor = rng.integers(0, 3, size=(2, 3, 1, 2)).astype(float)
    data = HMMData.from_tensor(tensor, [2], 2, alpha=0.7, beta=0.9)
    keys, exact = _exact_state_posterior(data)
    states = np.zeros((2, 3), dtype=np.int64)
    emission, transition = np.full((2, 1, 2), 0.5), np.full((3, 2), 0.5)
    n_sweeps = 10_000
    seen = dict.fromkeys(keys, 0)
    for _ in range(n_sweeps):
        states, emission, transition = sweep(data, states, emission, transition, rng, method=method)
        seen[tuple(states.ravel())] += 1
    frequency = np.array([seen[k] for k in keys]) / n_sweeps
    # 6 standard errors of an i.i.d. sample, inflated ×2 for autocorrelation
    tolerance = 12 * np.sqrt(exact * (1 - exact) / n_sweeps) + 1e-3
    assert np.all(np.abs(frequency - exact) < tolerance)


@pytest.mark.integration
def test_tempered_emission_update_has_the_tempered_dirichlet_mean():
    rng = np.random.default_rng(12)
    tensor = np.array([[[[30.0, 5.0, 0.0]]]])
    data = HMMData.from_tensor(tensor, [3], 1, beta=0.5)
    states = np.zeros((1, 1), dtype=np.int64)
    temperature = 4.0
    draws = np.array([update_emission(data, states, rng, temperature)[0, 0] for _ in range(20_000)])
    params = (np.array([30.0, 5.0, 0.0]) + 0.5 - 1) / temperature + 1
    mean = params / params.sum()
    sd = np.sqrt(mean * (1 - mean) / (params.sum() + 1))
    np.testing.assert_allclose(draws.mean(0), mean, atol=5 * sd.max() / np.sqrt(20_000))


def test_emission_log_likelihood_is_eq_70():
    sim = simulate_records(2, 3, 2, [2, 3], 60, np.random.default_rng(13))
    data = HMMData.from_tensor(sim.counts.counts, sim.counts.n_categories, 2)
    loglik = emission_log_likelihood(data, sim.emission)
    k = 1
    manual = sum(
        sim.counts.counts[1, 2, d, j] * np.log(sim.emission[k, d, j])
        for d in range(2)
        for j in range(sim.counts.n_categories[d])
    )
    assert loglik[1, 2, k] == pytest.approx(manual)


# --- truncated Beta and Dirichlet ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "lower", "upper"),
    [(2.0, 3.0, 0.1, 0.4), (0.5, 0.5, 0.05, 0.95), (400.0, 5.0, 0.2, 0.6), (3.0, 900.0, 0.3, 0.9)],
)
def test_truncated_beta_matches_its_cdf(a, b, lower, upper):
    draws = truncated_beta(np.full(4000, a), b, lower, upper, np.random.default_rng(14))
    assert draws.min() >= lower and draws.max() <= upper
    if special.betainc(a, b, upper) - special.betainc(a, b, lower) > 1e-12:

        def cdf(x):
            lo, hi = special.betainc(a, b, lower), special.betainc(a, b, upper)
            return (special.betainc(a, b, x) - lo) / (hi - lo)

        assert stats.kstest(draws, cdf).pvalue > 1e-3
    else:  # deep tail: the draws hug the end nearest the mode
        end = upper if (a - 1) * (1 - upper) > (b - 1) * upper else lower
        assert np.median(np.abs(draws - end)) < 0.01


def test_truncated_dirichlet_kernel_keeps_the_truncated_dirichlet():
    rng = np.random.default_rng(15)
    alpha, lower = np.array([0.6, 2.0, 1.2]), 0.08
    exact = rng.dirichlet(alpha, size=400_000)
    exact = exact[np.all(exact >= lower, axis=1)]
    theta = np.tile(np.full(3, 1 / 3), (2000, 1))  # 2000 independent chains
    for _ in range(30):
        theta = truncated_dirichlet_gibbs(theta, alpha, lower, rng)
    assert theta.min() >= lower
    np.testing.assert_allclose(theta.sum(1), 1.0)
    se = exact.std(0) / np.sqrt(2000)
    np.testing.assert_allclose(theta.mean(0), exact.mean(0), atol=5 * se.max())


def test_truncated_dirichlet_rejects_an_infeasible_truncation():
    with pytest.raises(ValueError, match="1/K"):
        truncated_dirichlet_gibbs(np.full(4, 0.25), np.ones(4), 0.3, np.random.default_rng(0))


# --- OPS temperature and costs ----------------------------------------------------------------


def test_log_likelihood_bound_reduces_to_eq_15_for_two_categories():
    a0 = 0.05
    assert log_likelihood_bound([2], [a0]) == pytest.approx(math.log((1 - a0) / a0))
    # Foulds App. E.1 derivation: Δ_d = log((M - 1) K_d + 1) at a0 = 1/(M K_d)
    cost = ops_cost([2, 3, 9], 1 / (10 * np.array([2, 3, 9])), 5.0)
    assert cost.log_likelihood_bound == pytest.approx(math.log(19) + math.log(28) + math.log(82))
    assert cost.temperature == pytest.approx(2 * cost.log_likelihood_bound / 5.0)


def test_untruncated_model_has_no_ops_temperature():
    with pytest.raises(ValueError, match="truncation=M"):
        log_likelihood_bound([2, 3], None)
    with pytest.raises(ValueError, match="unbounded"):
        ops_temperature(math.inf, 1.0)


def test_ops_cost_is_calibrated_by_the_one_calibration_function():
    from pymc_dp.hmm import gibbs_sweep_weight
    from pymc_dp.mechanisms.exponential import calibrate_temperature

    n_categories, lower = [2, 3], [0.05, 0.05]
    cost = ops_cost(n_categories, lower, 1.0)
    bound = log_likelihood_bound(n_categories, lower)
    assert cost.calibration == calibrate_temperature(2 * bound, 1.0)
    per_feature = np.log((1 - np.array([1, 2]) * 0.05) / 0.05)
    weight = 2 * bound + np.sum(np.array([1, 2]) * 2 * per_feature)
    assert gibbs_sweep_weight(n_categories, lower) == pytest.approx(weight)
    assert cost.sweep_weight == pytest.approx(weight)
    assert cost.sweep_epsilon == pytest.approx(weight / cost.temperature)


def test_large_epsilon_caps_the_temperature_and_charges_only_twice_the_bound():
    cost = ops_cost([2], [0.2], 100.0)
    assert cost.temperature == 1.0
    assert cost.epsilon == pytest.approx(2 * math.log(4))


def test_worst_case_epsilon_composes_every_update():
    cost = ops_cost([2, 3], [0.05, 0.05], 1.0)
    bound_d = np.log((1 - np.array([1, 2]) * 0.05) / 0.05)
    sweep_cost = 1.0 + np.sum(np.array([1, 2]) * 2 * bound_d) / cost.temperature
    assert cost.sweep_epsilon == pytest.approx(sweep_cost)
    assert ops_worst_case_epsilon(cost, 200, 2) == pytest.approx(400 * sweep_cost)


# --- empirical privacy audits -------------------------------------------------------------------

AUDIT_EPSILON = 1.0


def _audit_pair():
    """D0 and D1 differ in one record that moves cell and changes both features."""
    base_region, base_time, base = [0, 1], [1, 2], [[1, 1], [0, 2]]
    d0 = _small_counts([*base, [0, 0]], [*base_region, 0], [*base_time, 0])
    d1 = _small_counts([*base, [1, 1]], [*base_region, 1], [*base_time, 1])
    return d0, d1


def _laplace_audit(release, n_runs=20_000):
    d0, d1 = _audit_pair()
    rng = np.random.default_rng(16)
    out_0 = np.array([release(d0, rng) for _ in range(n_runs)])
    out_1 = np.array([release(d1, rng) for _ in range(n_runs)])
    higher = d0.counts > d1.counts
    lower = d0.counts < d1.counts

    def event(y):  # every changed coordinate on D0's side: likelihood ratio exactly e^ε
        return np.all(y[:, higher] >= d0.counts[higher], axis=1) & np.all(
            y[:, lower] <= d0.counts[lower], axis=1
        )

    return epsilon_lower_bound(out_0, out_1, event, alpha=0.05, vectorized=True)


@pytest.mark.integration
def test_audit_of_the_count_tensor_release():
    def release(counts, rng):
        noisy = release_laplace(
            counts.counts[np.broadcast_to(counts.category_mask, counts.shape)],
            sensitivity=cell_counts_sensitivity(2),
            epsilon=AUDIT_EPSILON,
            ledger=PrivacyLedger(),
            neighbouring="replace-one",
            variables=("audit",),
            statistic="audit",
            backend="numpy",
            rng=rng,
        )
        full = np.zeros(counts.shape)
        full[np.broadcast_to(counts.category_mask, counts.shape)] = noisy
        return full

    # raw (unprojected) noise is what the release's privacy rests on; the projection is free
    bound = _laplace_audit(release)
    assert 0.6 * AUDIT_EPSILON < bound <= AUDIT_EPSILON


@pytest.mark.integration
def test_audit_of_release_cell_counts_end_to_end():
    def release(counts, rng):
        return release_cell_counts(
            counts, AUDIT_EPSILON, ledger=PrivacyLedger(), backend="numpy", rng=rng
        ).counts

    assert _laplace_audit(release, n_runs=8_000) <= AUDIT_EPSILON


def test_audit_catches_per_feature_sensitivity_that_ignores_cell_moves():
    def broken(counts, rng):  # sensitivity 2 per feature split as if records never moved cell
        return counts.counts + rng.laplace(
            0, cell_counts_sensitivity(2) / 2 / AUDIT_EPSILON, counts.shape
        )

    assert _laplace_audit(broken) > 1.4 * AUDIT_EPSILON


def _ops_audit(temperature, n_runs=50_000):
    """K = 1, one binary feature: one truncated pair update is an exact OPS draw.

    ``n_runs`` independent runs at once: a grid of ``n_runs`` one-cell regions, region r in
    its own state r with the dataset's counts, so ``update_emission`` draws every row
    independently from the same conditional.
    """
    lower = np.array([0.05])
    states = np.arange(n_runs).reshape(n_runs, 1)
    start = np.full((n_runs, 1, 2), 0.5)

    def draws(record):
        tensor = np.broadcast_to(np.array(record, float), (n_runs, 1, 1, 2))
        data = HMMData.from_tensor(tensor, [2], n_runs, lower=lower)
        rng = np.random.default_rng(sum(record) + 17)
        return update_emission(data, states, rng, temperature, current=start)[:, 0, 0]

    return epsilon_lower_bound(
        draws([1, 0]), draws([0, 1]), lambda theta: theta > 0.9, vectorized=True
    )


def test_audit_of_the_ops_emission_draw():
    temperature = ops_cost([2], [0.05], AUDIT_EPSILON).temperature
    assert _ops_audit(temperature) <= AUDIT_EPSILON


def test_audit_catches_ops_without_tempering():
    assert _ops_audit(1.0) > 1.5 * AUDIT_EPSILON


# --- PyMC model, step and private sampling ------------------------------------------------------


@pytest.fixture(scope="module")
def simulated():
    return simulate_records(4, 25, 2, [2, 3, 4], 4000, np.random.default_rng(21))


def test_model_has_named_dims_and_the_joint_log_density(simulated):
    model = naive_bayes_hmm(simulated.counts, 2, alpha=0.8, beta=0.6)
    assert model.named_vars_to_dims["states"] == ("region", "time")
    assert model.named_vars_to_dims["emission_f1"] == ("state", "f1")
    assert model.named_vars_to_dims["transition"] == ("from_state", "state")
    assert list(model.coords["f2"]) == ["c0", "c1", "c2", "c3"]
    point = {
        "states": simulated.states,
        "transition": simulated.transition,
        **{f"emission_f{d}": simulated.emission[:, d, :k] for d, k in enumerate([2, 3, 4])},
    }
    logp = model.compile_logp(jacobian=False, sum=True)
    value_point = {
        model.rvs_to_values[model[name]].name: model.rvs_to_transforms[model[name]]
        .forward(value, *model[name].owner.inputs)
        .eval()
        if model.rvs_to_transforms.get(model[name]) is not None
        else value
        for name, value in point.items()
    }
    data = HMMData.from_tensor(simulated.counts.counts, [2, 3, 4], 2)
    loglik = emission_log_likelihood(data, simulated.emission)
    z = simulated.states
    expected = (
        np.take_along_axis(loglik, z[..., None], -1).sum()
        + np.log(
            simulated.transition[np.concatenate([np.zeros((4, 1), int), z[:, :-1] + 1], 1), z]
        ).sum()
        + stats.dirichlet(np.full(2, 0.8)).logpdf(simulated.transition.T).sum()
        + sum(
            stats.dirichlet(np.full(k, 0.6)).logpdf(simulated.emission[:, d, :k].T).sum()
            for d, k in enumerate([2, 3, 4])
        )
    )
    assert logp(value_point) == pytest.approx(expected, rel=1e-8)


@pytest.mark.integration
def test_prior_predictive_state_chains_have_the_grid_shape(simulated):
    model = naive_bayes_hmm(simulated.counts, 3)
    draw = pm.draw(model["states"], random_seed=1)
    assert draw.shape == (4, 25) and draw.min() >= 0 and draw.max() <= 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_states": 0}, "n_states"),
        ({"n_states": 2, "beta": 0.0}, "beta"),
        ({"n_states": 2, "truncation": 1.0}, "M"),
    ],
)
def test_model_rejects_bad_hyperparameters(simulated, kwargs, message):
    with pytest.raises(ValueError, match=message):
        naive_bayes_hmm(simulated.counts, **kwargs)


@pytest.mark.integration
def test_pm_sample_with_the_step_recovers_the_truth_after_relabelling(simulated):
    # the sampler's mathematics on raw simulated counts (not a private run: route_context is
    # the internal hook that routes use; users sample raw counts only through pymc_dp.sample)
    model = naive_bayes_hmm(simulated.counts, 2)
    with model, route_context():
        idata = pm.sample(
            150,
            tune=50,
            chains=2,
            cores=1,
            step=pymc_dp.NaiveBayesHMMGibbs(),
            progressbar=False,
            random_seed=3,
        )
    relabelled = relabel_states(idata)
    profile = relabelled["posterior"]["emission_f2"].mean(("chain", "draw")).values
    truth = simulated.emission[:, 2, :4]
    order = np.argsort(-np.bincount(simulated.states.ravel(), minlength=2))
    np.testing.assert_allclose(profile, truth[order], atol=0.05)
    modal = modal_states(relabelled).values
    assert (modal == np.argsort(order)[simulated.states]).mean() > 0.95
    table = emission_profiles(relabelled)
    assert table.loc[("(cells)", "share")].sum() == pytest.approx(1.0)


@pytest.mark.integration
def test_collapsed_and_ffbs_steps_agree(simulated):
    means = {}
    for method in ("ffbs", "collapsed"):
        with naive_bayes_hmm(simulated.counts, 2), route_context():
            step = pymc_dp.NaiveBayesHMMGibbs(method=method)
            idata = pm.sample(100, tune=50, chains=1, step=step, progressbar=False, random_seed=4)
        means[method] = np.sort(
            relabel_states(idata)["posterior"]["emission_f0"].mean(("chain", "draw")).values[:, 0]
        )
    np.testing.assert_allclose(means["ffbs"], means["collapsed"], atol=0.03)


@pytest.mark.integration
def test_private_laplace_trace_carries_released_counts_and_ledger(simulated, tmp_path):
    model = naive_bayes_hmm(simulated.counts, 2)
    idata = pymc_dp.sample(
        60,
        tune=30,
        chains=1,
        model=model,
        epsilon=4.0,
        noise_backend="numpy",
        noise_rng=np.random.default_rng(5),
        progressbar=False,
        random_seed=6,
    )
    assert set(idata.children) == {
        "posterior",
        "sample_stats",
        "released_statistics",
        "privacy_ledger",
    }
    released = idata["released_statistics"]["cell_counts"]
    assert released.dims == ("region", "time", "feature", "category")
    assert not np.array_equal(released.values, simulated.counts.counts)
    path = tmp_path / "hmm.nc"
    idata.to_netcdf(path)
    (event,) = PrivacyLedger.from_datatree(xr.open_datatree(path)).events
    assert (event.mechanism, event.epsilon, event.sensitivity) == ("laplace", 4.0, 6.0)


@pytest.mark.integration
def test_private_ops_trace_keeps_only_the_last_draw(simulated):
    model = naive_bayes_hmm(simulated.counts, 2, truncation=10)
    idata = pymc_dp.sample(
        20,
        tune=10,
        chains=2,
        cores=1,
        model=model,
        epsilon=2.0,
        mechanism="ops",
        progressbar=False,
        random_seed=7,
    )
    assert idata["posterior"].sizes["draw"] == 1
    # sampler statistics (and timing) read the unreleased sweeps: not in the trace
    assert "sample_stats" not in idata.children
    assert "sampling_time" not in idata["posterior"].attrs
    (event,) = PrivacyLedger.from_datatree(idata).events
    cost = ops_cost([2, 3, 4], 1 / (10 * np.array([2, 3, 4])), 1.0)
    assert event.assumes_convergence and event.epsilon == pytest.approx(2.0)
    assert event.temperature == pytest.approx(cost.temperature)
    assert event.worst_case_epsilon == pytest.approx(ops_worst_case_epsilon(cost, 30, 2))
    assert event.compositions == 2  # one converged draw per chain


@pytest.mark.integration
def test_ops_refuses_untruncated_models_and_overspending(simulated):
    with pytest.raises(ValueError, match="truncation=M"):
        pymc_dp.sample(
            5,
            tune=5,
            model=naive_bayes_hmm(simulated.counts, 2),
            epsilon=1.0,
            mechanism="ops",
            progressbar=False,
        )
    model = naive_bayes_hmm(simulated.counts, 2, truncation=10)
    with pytest.raises(
        BudgetExceededError,
        match=r"release of \(epsilon=2, delta=0\).*over the budget \(epsilon=1, delta=0\)",
    ):
        pymc_dp.sample(
            5,
            tune=5,
            chains=1,
            model=model,
            epsilon=2.0,
            budget=1.0,
            mechanism="ops",
            progressbar=False,
        )
    with pytest.raises(ValueError, match="convergence checks"):
        pymc_dp.sample(
            5,
            tune=5,
            chains=1,
            model=model,
            epsilon=1.0,
            mechanism="ops",
            compute_convergence_checks=True,
            progressbar=False,
        )


# --- held-out evaluation ------------------------------------------------------------------------


def test_heldout_cells_are_a_uniform_tenth():
    from pymc_dp.hmm.evaluation import heldout_cells

    masks = np.array([heldout_cells(10, 30, np.random.default_rng(s)) for s in range(400)])
    assert np.all(masks.sum(axis=(1, 2)) == 30)
    frequency = masks.mean(0)  # every cell equally likely: binomial(400, 0.1) per cell
    assert abs(frequency.mean() - 0.1) < 1e-12 and frequency.std() < 0.03


def test_heldout_log_likelihood_marginalises_the_cell_state_given_its_neighbours():
    from pymc_dp.hmm.evaluation import heldout_log_likelihood

    tensor = np.zeros((1, 3, 1, 2))
    tensor[0, 1, 0] = [3, 1]
    data = HMMData.from_tensor(tensor, [2], 2)
    mask = np.array([[False, True, False]])
    states = np.array([[0, 1, 1]])
    emission = np.array([[[0.8, 0.2]], [[0.3, 0.7]]])
    transition = np.array([[0.5, 0.5], [0.9, 0.1], [0.4, 0.6]])
    prior = transition[1] * transition[1:, 1]  # Pr(z=k | z_prev = 0) Pr(z_next = 1 | z=k)
    prior /= prior.sum()
    expected = np.log(np.sum(prior * emission[:, 0, 0] ** 3 * emission[:, 0, 1]))
    (value,) = heldout_log_likelihood(data, mask, states, emission, transition)
    assert value == pytest.approx(expected)


def test_stops_cells_cover_every_iso_week_of_2017():
    from pymc_dp.datasets import load_mpls_stops
    from pymc_dp.stops import HMM_FEATURES, stops_cells, stops_weeks

    weeks = stops_weeks()
    assert (weeks[0], weeks[1], weeks[-1], len(weeks)) == ("2016-W52", "2017-W01", "2017-W52", 53)
    stops = load_mpls_stops()
    for regions, n_regions in (("precinct", 5), ("neighborhood", 87)):
        counts = stops_cells(stops, regions)
        assert counts.shape == (n_regions, 53, len(HMM_FEATURES), 9)
        assert counts.cell_totals().sum() == len(stops)
        np.testing.assert_array_equal(counts.counts.sum(axis=(0, 1, 3)), len(stops))
    with pytest.raises(ValueError, match="regions must be one of"):
        stops_cells(stops, "ward")


def test_unprojected_release_keeps_unbiased_negative_counts_and_the_sampler_runs():
    sim = simulate_records(6, 10, 2, [2, 3], 300, np.random.default_rng(31))
    rng = np.random.default_rng(32)
    noisy = release_cell_counts(
        sim.counts, 0.5, ledger=PrivacyLedger(), backend="numpy", rng=rng, projection="none"
    )
    mask = np.broadcast_to(sim.counts.category_mask, sim.counts.shape)
    residual = (noisy.counts - sim.counts.counts)[mask]
    assert noisy.counts.min() < 0 and np.all(noisy.counts[~mask] == 0)
    assert abs(residual.mean()) < 5 * 8 * np.sqrt(2) / np.sqrt(residual.size)  # Laplace(8)
    clamped = release_cell_counts(
        sim.counts, 0.5, ledger=PrivacyLedger(), backend="numpy", rng=rng, projection="cell"
    )
    assert (clamped.counts - sim.counts.counts)[mask].mean() > 1.0  # clamping bias
    with pytest.raises(InvalidPrivateDataError, match="negative"):
        sim.counts.with_counts(noisy.counts)  # negatives only in released counts
    data = HMMData.from_tensor(noisy.counts, noisy.n_categories, 2)
    _, emission, _ = sweep(
        data, sim.states, sim.emission, sim.transition, np.random.default_rng(33)
    )
    assert np.all(emission[:, 0, :2] > 0) and np.allclose(emission.sum(-1), 1.0)
    with pytest.raises(ValueError, match="projection"):
        release_cell_counts(sim.counts, 1.0, ledger=PrivacyLedger(), projection="aggregate")


def test_effective_states_is_the_exponential_of_the_occupancy_entropy():
    from pymc_dp.hmm.evaluation import effective_states

    assert effective_states(np.zeros((3, 4), int), 10) == pytest.approx(1.0)
    assert effective_states(np.arange(12).reshape(3, 4) % 4, 10) == pytest.approx(4.0)
    z = np.array([0, 0, 0, 1])
    assert effective_states(z, 2) == pytest.approx(
        np.exp(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
    )


@pytest.mark.integration
def test_exponential_mechanism_gibbs_releases_every_draw_at_the_composed_cost(simulated):
    model = naive_bayes_hmm(simulated.counts, 2, truncation=10)
    idata = pymc_dp.sample(
        12,
        tune=8,
        chains=1,
        model=model,
        epsilon=50.0,
        mechanism="gibbs-exponential",
        progressbar=False,
        random_seed=8,
    )
    ledger = PrivacyLedger.from_datatree(idata)
    unit = ops_cost([2, 3, 4], 1 / (10 * np.array([2, 3, 4])), 1.0)
    per_sweep = unit.sweep_epsilon * unit.temperature
    # one event per kind of update: states (20 sweeps) and one per feature (distinct Δ_d)
    states, *emissions = ledger.events
    assert [e.compositions for e in ledger.events] == [20, 20 * 1, 20 * 2, 20 * 3]
    assert states.variables == ("states",) and emissions[2].variables == ("emission_f2",)
    for event in ledger.events:
        assert event.temperature == pytest.approx(20 * per_sweep / 50.0)
        assert not event.assumes_convergence and event.mechanism == "gibbs-exponential"
        assert event.epsilon / event.compositions == pytest.approx(
            2 * event.sensitivity / event.temperature
        )
    assert states.sensitivity == pytest.approx(unit.log_likelihood_bound)
    assert ledger.epsilon == pytest.approx(50.0)
    assert idata["posterior"].sizes["draw"] == 12
    with pytest.raises(ValueError, match="whole chain"):
        pymc_dp.sample(5, model=model, epsilon=1.0, mechanism="gibbs-exponential", release="last")
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(
        BudgetExceededError, match=r"over the budget \(epsilon=10, delta=0\); nothing was released"
    ):
        pymc_dp.sample(
            5,
            tune=5,
            chains=1,
            model=model,
            epsilon=50.0,
            mechanism="gibbs-exponential",
            ledger=ledger,
        )
    assert len(ledger) == 0


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_seeded_hmm_runs_are_flagged_as_no_guarantee(simulated, mechanism):
    """The HMM's tempered mechanisms flag a seeded noise_rng as the tempered route does
    (review finding 4; unflagged before)."""
    ledger = PrivacyLedger()
    pymc_dp.sample(
        2,
        tune=2,
        chains=1,
        model=naive_bayes_hmm(simulated.counts, 2, truncation=10),
        epsilon=2.0,
        mechanism=mechanism,
        ledger=ledger,
        noise_rng=np.random.default_rng(5),
        progressbar=False,
        random_seed=7,
    )
    assert ledger.events and all("noise_rng" in e.unverified_assumption for e in ledger.events)
    assert not ledger.guaranteed
