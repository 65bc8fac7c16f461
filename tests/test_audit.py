"""Empirical privacy audits of the Laplace release paths, with broken negative controls.

Tolerances come from the math. On a worst-case neighbouring pair whose released statistics
differ by Δ (the claimed sensitivity) spread over m coordinates, the Laplace(Δ/ε) likelihood
ratio is maximal — exactly e^ε — on the event "every changed coordinate lies on D0's side of
D0's own value" (coordinate ≥ its D0 value where D0 is higher, ≤ where D0 is lower). Then
p0 = 2^-m and p1 = 2^-m e^-ε exactly, so the audit bound is tight: it only loses the width of
the Clopper–Pearson intervals. Plugging the expected counts into the bound gives (ε = 1):

    runs per dataset   m = 1    m = 2
    2 000              0.84     0.75
    15 000             0.94     0.91
    200 000            0.98     0.98

with a sampling standard deviation of ≈ sqrt((1 − p0)/(n p0) + (1 − p1)/(n p1)) (0.005–0.01 at
200k, 0.02–0.03 at 15k, 0.05 at 2k). The assertions (> 0.9 ε at 200k, > 0.75 ε at 15k,
> 0.5 ε at 2k) sit five or more standard deviations below the prediction, and "≤ ε" holds for a
sound mechanism with probability ≥ 1 − α by construction (fixed seeds make every test
deterministic). A mechanism whose noise is calibrated to half its true sensitivity is 2ε-DP
and no better: its predicted bound is ≈ 1.9–1.97 ε, far above the claimed ε.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from pymc_dp import PrivacyLedger
from pymc_dp.audit import (
    AuditResult,
    audit_mechanism,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_from_counts,
)
from pymc_dp.conjugacy import ConjugateLink
from pymc_dp.families import (
    BetaBernoulli,
    BetaBinomial,
    ConjugateFamily,
    DirichletCategorical,
    DirichletMultinomial,
    RecordDomain,
)
from pymc_dp.mechanisms.laplace import release_laplace
from pymc_dp.release import (
    release_sufficient_statistics,
    released_components,
    sufficient_statistics,
    sufficient_statistics_sensitivity,
)

EPSILON = 1.0
ALPHA = 0.05


# --- Clopper–Pearson -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "alpha"),
    [(0, 50, 0.05), (7, 50, 0.05), (50, 50, 0.05), (1, 3, 0.1), (123, 1000, 0.01), (0, 1, 0.2)],
)
def test_clopper_pearson_matches_scipy_exact_interval(k, n, alpha):
    ci = stats.binomtest(k, n).proportion_ci(1 - alpha, method="exact")
    lower, upper = clopper_pearson(k, n, alpha)
    assert lower == pytest.approx(ci.low, rel=1e-10, abs=1e-14)
    assert upper == pytest.approx(ci.high, rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("n", [1, 10, 100, 12345])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_clopper_pearson_closed_forms_at_the_edges(n, alpha):
    # k = 0: P[X = 0] = (1 − p)^n = alpha/2 at the upper bound; k = n is its mirror image.
    assert clopper_pearson(0, n, alpha) == pytest.approx((0.0, 1 - (alpha / 2) ** (1 / n)))
    assert clopper_pearson(n, n, alpha) == pytest.approx(((alpha / 2) ** (1 / n), 1.0))


def test_clopper_pearson_has_at_least_nominal_coverage():
    """Exact coverage P_p[lower(X) ≤ p ≤ upper(X)] over a grid of p, n = 25."""
    n, alpha = 25, 0.1
    intervals = np.array([clopper_pearson(k, n, alpha) for k in range(n + 1)])
    for p in np.linspace(0.001, 0.999, 199):
        covered = (intervals[:, 0] <= p) & (p <= intervals[:, 1])
        assert stats.binom.pmf(np.arange(n + 1), n, p)[covered].sum() >= 1 - alpha - 1e-12


@pytest.mark.parametrize(
    ("k", "n", "alpha"), [(-1, 10, 0.05), (11, 10, 0.05), (0, 0, 0.05), (1.5, 10, 0.05)]
)
def test_clopper_pearson_rejects_bad_counts(k, n, alpha):
    with pytest.raises(ValueError, match=r"k must be|need 0 <= k|n must be|alpha"):
        clopper_pearson(k, n, alpha)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, float("nan")])
def test_clopper_pearson_rejects_bad_alpha(alpha):
    with pytest.raises(ValueError, match=r"alpha must lie in"):
        clopper_pearson(3, 10, alpha)


# --- the bound itself ------------------------------------------------------------------------


def test_lower_bound_is_the_bonferroni_clopper_pearson_ratio():
    k0, k1, n = 600, 200, 1000
    # Four one-sided statements at alpha/4 each: two-sided intervals at alpha/2.
    p0_lower = stats.beta.ppf(ALPHA / 4, k0, n - k0 + 1)
    p1_upper = stats.beta.ppf(1 - ALPHA / 4, k1 + 1, n - k1)
    expected = math.log(p0_lower / p1_upper)
    outputs_0 = np.r_[np.ones(k0), np.zeros(n - k0)]
    outputs_1 = np.r_[np.ones(k1), np.zeros(n - k1)]
    bound = epsilon_lower_bound(outputs_0, outputs_1, lambda y: y > 0.5, alpha=ALPHA)
    assert bound == pytest.approx(expected, rel=1e-12)
    # Swapping the datasets, or using the complement event, gives the same bound.
    assert epsilon_lower_bound(outputs_1, outputs_0, lambda y: y > 0.5) == pytest.approx(bound)
    assert epsilon_lower_bound(outputs_0, outputs_1, lambda y: y < 0.5) == pytest.approx(bound)


def test_lower_bound_uses_the_complement_event():
    # S is common on both datasets (99% vs 90%), so S itself says little (ratio 1.1); its
    # complement (1% vs 10%) is informative in the direction D1 over D0.
    hits_0, hits_1, n = 9_900, 9_000, 10_000
    c0, c1 = n - hits_0, n - hits_1
    expected = math.log(
        stats.beta.ppf(ALPHA / 4, c1, n - c1 + 1) / stats.beta.ppf(1 - ALPHA / 4, c0 + 1, n - c0)
    )
    bound = epsilon_lower_bound_from_counts(hits_0, n, hits_1, n)
    assert bound == pytest.approx(expected, rel=1e-12)
    assert bound > 2.0 > math.log(0.99 / 0.90)


def test_lower_bound_decreases_with_delta_and_vanishes():
    args = (600, 1000, 200, 1000)
    bounds = [epsilon_lower_bound_from_counts(*args, delta=d) for d in (0.0, 0.1, 0.3, 0.6)]
    assert bounds[0] > bounds[1] > bounds[2] > 0
    assert bounds[3] == 0.0


def test_lower_bound_is_zero_for_identical_frequencies():
    outputs = np.arange(1000) % 2
    assert epsilon_lower_bound(outputs, outputs, lambda y: y == 1) == 0.0
    assert epsilon_lower_bound_from_counts(0, 10, 0, 10) == 0.0


def test_vectorised_event_matches_per_output_event():
    rng = np.random.default_rng(5)
    out_0, out_1 = rng.laplace(1.0, 1.0, (3000, 2)), rng.laplace(0.0, 1.0, (3000, 2))
    per_output = epsilon_lower_bound(out_0, out_1, lambda y: y[0] > 1.0)
    vectorised = epsilon_lower_bound(out_0, out_1, lambda y: y[:, 0] > 1.0, vectorized=True)
    assert per_output == vectorised > 0


def test_bad_outputs_are_rejected():
    with pytest.raises(ValueError, match="no outputs"):
        epsilon_lower_bound([], [1.0], lambda y: y > 0)
    with pytest.raises(ValueError, match="one boolean per run"):
        epsilon_lower_bound(np.zeros((5, 2)), np.zeros((5, 2)), lambda y: y > 0, vectorized=True)
    with pytest.raises(ValueError, match="delta"):
        epsilon_lower_bound_from_counts(1, 2, 1, 2, delta=1.0)


def test_a_sound_mechanism_exceeds_epsilon_at_most_alpha_of_the_time():
    """The defining guarantee, simulated: 2000 small audits of an exactly e^ε-tight pair."""
    rng = np.random.default_rng(11)
    n, p0 = 400, 0.5
    p1 = p0 * math.exp(-EPSILON)
    hits_0, hits_1 = rng.binomial(n, p0, 2000), rng.binomial(n, p1, 2000)
    bounds = [
        epsilon_lower_bound_from_counts(a, n, b, n) for a, b in zip(hits_0, hits_1, strict=True)
    ]
    assert np.mean(np.asarray(bounds) > EPSILON) <= ALPHA


def test_audit_result_is_frozen():
    result = audit_mechanism(
        lambda d, rng: d + rng.laplace(), 0.0, 1.0, lambda y: y > 1, 100, np.random.default_rng(0)
    )
    assert isinstance(result, AuditResult)
    assert result.n_runs == 100 and result.alpha == ALPHA and result.delta == 0.0
    assert 0 < result.frequency_0 < result.frequency_1 < 1
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"cannot assign to field 'n_runs'"):
        result.n_runs = 5  # type: ignore[misc]


# --- worst-case neighbouring pairs -----------------------------------------------------------


def _link(
    family: ConjugateFamily, data, domain: RecordDomain, groups=None, n_groups: int = 1
) -> ConjugateLink:
    groups = None if groups is None else np.asarray(groups)
    return ConjugateLink("y", "p", family, np.asarray(data), groups, n_groups, domain)


BERNOULLI = RecordDomain(n_categories=2)

# One group, replace-one: only n₊ is released (n public), sensitivity 1.
ONE_GROUP = (
    _link(BetaBernoulli(), [1, 0, 0, 0], BERNOULLI),
    _link(BetaBernoulli(), [0] * 4, BERNOULLI),
)
# Grouped table, replace-one: (group 0, success) → (group 1, failure) moves 2 in L1.
GROUPED = (
    _link(BetaBernoulli(), [1, 0, 1], BERNOULLI, groups=[0, 1, 1], n_groups=2),
    _link(BetaBernoulli(), [0, 0, 1], BERNOULLI, groups=[1, 1, 1], n_groups=2),
)

# Further worst-case pairs, each attaining its link's sensitivity.
PAIRS = {
    "bernoulli-one-group-replace": (*ONE_GROUP, "replace-one"),
    "bernoulli-grouped-replace": (*GROUPED, "replace-one"),
    "bernoulli-grouped-add-remove": (
        _link(BetaBernoulli(), [1, 0, 1], BERNOULLI, groups=[0, 1, 1], n_groups=2),
        _link(BetaBernoulli(), [0, 1], BERNOULLI, groups=[1, 1], n_groups=2),
        "add-remove-one",
    ),
    "categorical-k3-replace": (
        _link(DirichletCategorical(), [0, 2, 1], RecordDomain(3)),
        _link(DirichletCategorical(), [1, 2, 1], RecordDomain(3)),
        "replace-one",
    ),
    "binomial-public-trials-replace": (
        _link(BetaBinomial(), [3, 1], RecordDomain(2, max_trials=3, trials=3)),
        _link(BetaBinomial(), [0, 1], RecordDomain(2, max_trials=3, trials=3)),
        "replace-one",
    ),
    "binomial-private-trials-grouped-replace": (
        _link(
            BetaBinomial(),
            [3, 1],
            RecordDomain(2, max_trials=3, trials=np.array([3, 2])),
            groups=[0, 1],
            n_groups=2,
        ),
        _link(
            BetaBinomial(),
            [0, 1],
            RecordDomain(2, max_trials=3, trials=np.array([3, 2])),
            groups=[1, 1],
            n_groups=2,
        ),
        "replace-one",
    ),
    "multinomial-add-remove": (
        _link(DirichletMultinomial(), [[2, 0, 0], [0, 1, 1]], RecordDomain(3, 2, 2)),
        _link(DirichletMultinomial(), [[0, 1, 1]], RecordDomain(3, 2, 2)),
        "add-remove-one",
    ),
}


def _released(link: ConjugateLink, neighbouring: str) -> np.ndarray:
    return sufficient_statistics(link)[:, : released_components(link, neighbouring)]


def _optimal_event(exact_0: np.ndarray, exact_1: np.ndarray):
    """Event on which the Laplace likelihood ratio of D0 over D1 is maximal (= e^(Δ/b)).

    Works on one output (shape of ``exact_0``) and on stacked outputs (extra leading axis).
    """
    up, down = exact_0 > exact_1, exact_0 < exact_1

    def event(noisy):
        y = np.asarray(noisy)
        high = np.all(y[..., up] >= exact_0[up], axis=-1)
        low = np.all(y[..., down] <= exact_0[down], axis=-1)
        return high & low

    return event


def _batched_release(link, neighbouring, n_runs, rng, backend="numpy", sensitivity=None):
    """``n_runs`` independent runs of the release, drawn in one ``release_laplace`` call.

    ``release_laplace`` adds i.i.d. Laplace(sensitivity / ε) noise to every element, so one
    call on ``n_runs`` stacked copies of the statistic is ``n_runs`` independent runs of the
    mechanism (the per-run end-to-end audits below check ``release_sufficient_statistics``).
    """
    exact = _released(link, neighbouring)
    if sensitivity is None:
        sensitivity = sufficient_statistics_sensitivity(link, neighbouring)
    return release_laplace(
        np.broadcast_to(exact, (n_runs, *exact.shape)),
        sensitivity=sensitivity,
        epsilon=EPSILON,
        ledger=PrivacyLedger(),
        neighbouring=neighbouring,
        variables=(link.observed, link.prior),
        statistic="audit batch",
        backend=backend,
        rng=rng,
    )


def _batched_audit(pair, n_runs, seed, backend="numpy", sensitivity=None):
    d0, d1, neighbouring = pair
    rng = np.random.default_rng(seed) if backend == "numpy" else None
    out_0 = _batched_release(d0, neighbouring, n_runs, rng, backend, sensitivity)
    out_1 = _batched_release(d1, neighbouring, n_runs, rng, backend, sensitivity)
    event = _optimal_event(_released(d0, neighbouring), _released(d1, neighbouring))
    return epsilon_lower_bound(out_0, out_1, event, alpha=ALPHA, vectorized=True)


@pytest.mark.parametrize("name", list(PAIRS))
def test_pairs_are_worst_case(name):
    d0, d1, neighbouring = PAIRS[name]
    gap = np.abs(_released(d0, neighbouring) - _released(d1, neighbouring)).sum()
    assert gap == sufficient_statistics_sensitivity(d0, neighbouring)
    assert sufficient_statistics_sensitivity(d1, neighbouring) == gap


@pytest.mark.parametrize("name", list(PAIRS))
def test_batched_audit_is_tight_and_never_exceeds_epsilon(name):
    bound = _batched_audit(PAIRS[name], 200_000, seed=sum(map(ord, name)))
    assert 0.9 * EPSILON < bound <= EPSILON


# --- end-to-end audits through release_sufficient_statistics, one ledger per run ------------


def _end_to_end(pair, backend="numpy"):
    """``mechanism(dataset, rng)``: the full release path with a fresh ledger per run."""
    links = dict(enumerate(pair))

    def mechanism(dataset, rng):
        out = release_sufficient_statistics(
            links[dataset],
            EPSILON,
            ledger=PrivacyLedger(),
            neighbouring="replace-one",
            backend=backend,
            rng=rng if backend == "numpy" else None,
        )
        assert out.event.epsilon == EPSILON
        return out.noisy

    return mechanism


def _end_to_end_audit(pair, n_runs, seed, backend="numpy"):
    event = _optimal_event(_released(pair[0], "replace-one"), _released(pair[1], "replace-one"))
    rng = np.random.default_rng(seed)
    return audit_mechanism(_end_to_end(pair, backend), 0, 1, event, n_runs, rng, ALPHA)


@pytest.mark.integration
def test_end_to_end_audit_one_group_bernoulli():
    result = _end_to_end_audit(ONE_GROUP, 15_000, seed=2024)
    assert 0.75 * EPSILON < result.epsilon_lower_bound <= EPSILON
    # p0 = 1/2 and p1 = e^-ε / 2 exactly.
    assert result.frequency_0 == pytest.approx(0.5, abs=0.02)
    assert result.frequency_1 == pytest.approx(0.5 * math.exp(-EPSILON), abs=0.02)


@pytest.mark.integration
def test_end_to_end_audit_grouped_table():
    result = _end_to_end_audit(GROUPED, 15_000, seed=2025)
    assert 0.75 * EPSILON < result.epsilon_lower_bound <= EPSILON
    assert result.frequency_0 == pytest.approx(0.25, abs=0.02)
    assert result.frequency_1 == pytest.approx(0.25 * math.exp(-EPSILON), abs=0.02)


@pytest.mark.integration
def test_end_to_end_audit_through_opendp():
    result = _end_to_end_audit(ONE_GROUP, 2_000, seed=0, backend="opendp")
    assert 0.5 * EPSILON < result.epsilon_lower_bound <= EPSILON


def test_batched_audit_through_opendp():
    bound = _batched_audit(PAIRS["bernoulli-one-group-replace"], 30_000, seed=0, backend="opendp")
    assert 0.85 * EPSILON < bound <= EPSILON  # predicted 0.96, sd 0.025


# --- negative controls: broken mechanisms must be caught -------------------------------------


def _half_sensitivity_laplace(values, rng, n_runs=None):
    """BROKEN on purpose: numpy Laplace with scale sensitivity / 2 / ε (claims ε, is 2ε-DP)."""
    values = np.asarray(values, dtype=np.float64)
    shape = values.shape if n_runs is None else (n_runs, *values.shape)
    return values + rng.laplace(0.0, 1.0 / 2 / EPSILON, size=shape)


def test_negative_control_half_sensitivity_noise_is_caught():
    d0, d1, neighbouring = PAIRS["bernoulli-one-group-replace"]
    exact_0, exact_1 = _released(d0, neighbouring), _released(d1, neighbouring)
    rng = np.random.default_rng(7)
    out_0 = _half_sensitivity_laplace(exact_0, rng, 200_000)
    out_1 = _half_sensitivity_laplace(exact_1, rng, 200_000)
    event = _optimal_event(exact_0, exact_1)
    bound = epsilon_lower_bound(out_0, out_1, event, alpha=ALPHA, vectorized=True)
    assert bound > 1.5 * EPSILON  # claimed ε = 1; true ε = 2, predicted bound 1.97
    assert bound <= 2 * EPSILON


def test_negative_control_caught_by_per_run_audit():
    d0, d1, neighbouring = PAIRS["bernoulli-one-group-replace"]
    exacts = (_released(d0, neighbouring), _released(d1, neighbouring))
    result = audit_mechanism(
        lambda d, rng: _half_sensitivity_laplace(exacts[d], rng),
        0,
        1,
        _optimal_event(*exacts),
        15_000,
        np.random.default_rng(8),
        ALPHA,
    )
    assert result.epsilon_lower_bound > EPSILON


def test_negative_control_grouped_table_with_sensitivity_one_is_caught():
    """The grouped replace-one table needs Δ = 2; calibrating with Δ = 1 doubles ε."""
    bound = _batched_audit(PAIRS["bernoulli-grouped-replace"], 200_000, seed=9, sensitivity=1.0)
    assert bound > 1.5 * EPSILON  # predicted 1.97


def test_negative_control_full_vector_with_one_component_sensitivity_is_caught():
    """Δ = 1 is only valid for the first component; releasing both with Δ = 1 is 2ε-DP."""
    d0, d1 = ONE_GROUP
    full_0, full_1 = sufficient_statistics(d0), sufficient_statistics(d1)
    rng = np.random.default_rng(10)

    def broken(exact):
        return release_laplace(
            np.broadcast_to(exact, (200_000, *exact.shape)),
            sensitivity=1.0,
            epsilon=EPSILON,
            ledger=PrivacyLedger(),
            neighbouring="replace-one",
            variables=("y",),
            statistic="broken: full vector with the one-component sensitivity",
            backend="numpy",
            rng=rng,
        )

    event = _optimal_event(full_0, full_1)
    bound = epsilon_lower_bound(broken(full_0), broken(full_1), event, vectorized=True)
    assert bound > 1.5 * EPSILON


# --- bounded families: the Normal's weighted (Σu, Σu²) release under replace-one -----------
#
# The release is c ⊙ (Σw, Σw²) + Laplace(Δ/ε), w = u − ½ centred, c = (0.3, 2.8), Δ =
# (c₁ + c₂)²/(4c₂) ≈ 0.858 (pymc_dp.families.second_moments). Worst case: one record at the
# upper bound (w = ½) against one at w′ = a* − ½ (a* = 0.446, replace_one_maximiser): the two
# coordinates move by 0.166 and 0.692, together the whole Δ. Event: both coordinates on D0's
# side of its exact value: p0 = ¼, p1 = ¼e^(−ε), predicted bound 0.91. Broken control: noise
# for Δ/2 (true ε = 2): p1 = ¼e^(−2ε), predicted 1.87.


def _pair_event(exact_0, exact_1, most=0):
    """The event "at most ``most`` of the coordinates that move are on D1's side of D0's
    exact value", and its probabilities (p0, p1) under Laplace(``scale``) noise: under D0
    each moving coordinate is on D1's side w.p. ½, under D1 w.p. 1 − ½e^(−|δ_j|/b)."""
    shift = np.asarray(exact_1, float) - np.asarray(exact_0, float)
    moving = np.abs(shift) > 1e-12

    def event(noisy):
        side = np.sign(shift[moving]) * (np.asarray(noisy)[moving] - exact_0[moving]) > 0
        return int(side.sum()) <= most

    def probabilities(scale):
        p_far = 1.0 - 0.5 * np.exp(-np.abs(shift[moving]) / scale)
        dist = np.zeros(moving.sum() + 1)
        dist[0] = 1.0
        for p in p_far:  # Poisson-binomial law of the count on D1's side
            dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
            dist[0] *= 1 - p
        return float(stats.binom.cdf(most, moving.sum(), 0.5)), float(dist[: most + 1].sum())

    return event, probabilities


def _normal_link():
    import pymc as pm

    from pymc_dp.analysis import recognise
    from pymc_dp.families.second_moments import replace_one_maximiser

    values = np.linspace(0.2, 0.8, 9)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.5, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu=mu, sigma=sigma, observed=values)
    link = recognise(model, "laplace", data_bounds={"y": (0.0, 1.0)}).blocks["y"]
    family = link.structure.family
    _, worst = replace_one_maximiser(1, family.weights(link.structure, "replace-one"))
    d0, d1 = np.append(values, worst[0]), np.append(values, 1.0)  # bounds (0, 1): u = y
    return link, d0, d1


def _normal_weighted(link, data):
    from pymc_dp.families.bounded import BoundedLink

    family, structure = link.structure.family, link.structure
    index = family.released_components(structure, "replace-one")
    exact = family.statistics(BoundedLink(structure, data))[0, index]
    return exact * family.weights(structure, "replace-one")[index]


def _normal_release(link, sensitivity=None):
    from pymc_dp.families.bounded import BoundedLink
    from pymc_dp.mechanisms.statistics import release_bounded

    def mechanism(data, rng):
        if sensitivity is None:
            target = BoundedLink(link.structure, data)
            out = release_bounded(target, EPSILON, ledger=PrivacyLedger(), backend="numpy", rng=rng)
            assert out.event.sensitivity == pytest.approx(3.1**2 / 11.2, rel=1e-12)
            assert out.event.epsilon == EPSILON
            return out.noisy[0]
        # BROKEN on purpose: the weighted statistic released with noise for Δ = ``sensitivity``.
        exact = _normal_weighted(link, data)
        return exact + rng.laplace(0.0, sensitivity / EPSILON, size=exact.shape)

    return mechanism


@pytest.mark.integration
def test_end_to_end_audit_bounded_normal_release():
    link, d0, d1 = _normal_link()
    exact_0, exact_1 = _normal_weighted(link, d0), _normal_weighted(link, d1)
    assert np.abs(exact_1 - exact_0).sum() == pytest.approx(3.1**2 / 11.2, rel=1e-9)  # all of Δ
    event, probabilities = _pair_event(exact_0, exact_1)
    datasets = {0: d0, 1: d1}
    result = audit_mechanism(
        lambda d, rng: _normal_release(link)(datasets[d], rng),
        0,
        1,
        event,
        15_000,
        np.random.default_rng(2026),
        ALPHA,
    )
    p0, p1 = probabilities(3.1**2 / 11.2 / EPSILON)
    assert p0 == pytest.approx(0.25) and p1 == pytest.approx(0.25 * math.exp(-EPSILON))
    assert 0.75 * EPSILON < result.epsilon_lower_bound <= EPSILON  # predicted 0.91
    assert result.frequency_0 == pytest.approx(p0, abs=0.02)
    assert result.frequency_1 == pytest.approx(p1, abs=0.02)


@pytest.mark.integration
def test_negative_control_bounded_normal_with_half_sensitivity_is_caught():
    """The weighted (Σw, Σw²) moves by Δ ≈ 0.858 in L1 on the worst pair; noise for Δ/2 is
    2ε-DP."""
    link, d0, d1 = _normal_link()
    event, _ = _pair_event(_normal_weighted(link, d0), _normal_weighted(link, d1))
    datasets = {0: d0, 1: d1}
    result = audit_mechanism(
        lambda d, rng: _normal_release(link, sensitivity=3.1**2 / 11.2 / 2)(datasets[d], rng),
        0,
        1,
        event,
        15_000,
        np.random.default_rng(2027),
        ALPHA,
    )
    assert result.epsilon_lower_bound > EPSILON  # predicted 1.87


# --- bounded families through release_bounded: Poisson and linear regression ----------------
#
# Each run is the real mechanism: ``release_bounded`` (NumPy backend) on a fresh BoundedLink of
# the model's recognised structure, with a fresh ledger. The broken controls run the same path
# with a family that declares a too-small sensitivity, so the release is calibrated to it.

POISSON_BOUND = 10  # data_bounds {"y": (0, c)}
REGRESSION_Y_BOUNDS = (-2.0, 3.0)
REGRESSION_X_BOUNDS = (-1.0, 1.0)  # every covariate column


def _bounded_mechanism(structure, sensitivity):
    """``mechanism((y, X), rng)``: ``release_bounded``, a fresh ledger; checks the ledger's Δ."""
    from pymc_dp.families.bounded import BoundedLink
    from pymc_dp.mechanisms.statistics import release_bounded

    def mechanism(data, rng):
        y, x = data
        out = release_bounded(
            BoundedLink(structure, y, covariates=x),
            EPSILON,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
        )
        assert out.event.sensitivity == sensitivity and out.event.epsilon == EPSILON
        return out.noisy[0]

    return mechanism


def _miscalibrated(structure, sensitivity):
    """BROKEN on purpose: the structure's family, declaring L1 sensitivity ``sensitivity``."""
    family = type(structure.family)
    broken = type(
        f"Miscalibrated{family.__name__}",
        (family,),
        {"sensitivity": lambda self, structure, neighbouring: sensitivity},
    )
    return dataclasses.replace(structure, family=broken())


def _predicted_bound(p0, p1, n_runs):
    """The audit's lower bound at the expected counts n·p0 and n·p1."""
    return epsilon_lower_bound_from_counts(
        round(n_runs * p0), n_runs, round(n_runs * p1), n_runs, alpha=ALPHA
    )


def _poisson_link():
    import pymc as pm

    from pymc_dp.analysis import recognise

    counts = np.array([0, 1, 1, 2, 3, 3, 4, 5, 7, 8])
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 0.5)
        pm.Poisson("y", lam, observed=counts)
    link = recognise(model, "laplace", data_bounds={"y": (0, POISSON_BOUND)}).blocks["y"]
    # Worst case: one record at 0 or at c. n is public (one group, replace-one), only Σy/c is
    # released, and it moves by exactly 1, the whole declared Δ = 1, in m = 1 coordinate.
    d0 = (np.append(counts, 0), None)
    d1 = (np.append(counts, POISSON_BOUND), None)
    return link.structure, d0, d1


def _poisson_event(d0):
    exact = d0[0].sum() / POISSON_BOUND  # D0 is the lower one
    return lambda noisy: bool(np.all(noisy <= exact))


@pytest.mark.integration
def test_end_to_end_audit_bounded_poisson_release():
    from pymc_dp.families.bounded import BoundedLink

    structure, d0, d1 = _poisson_link()
    family = structure.family
    assert family.released_components(structure, "replace-one").tolist() == [1]
    # The family releases Σy/c, and the pair saturates Δ = 1.
    for data in (d0, d1):
        target = BoundedLink(structure, data[0])
        assert family.statistics(target)[0, 1] == pytest.approx(data[0].sum() / POISSON_BOUND)
    assert (d1[0].sum() - d0[0].sum()) / POISSON_BOUND == 1.0
    result = audit_mechanism(
        _bounded_mechanism(structure, 1.0),
        d0,
        d1,
        _poisson_event(d0),
        15_000,
        np.random.default_rng(2028),
        ALPHA,
    )
    # Laplace(1/ε) noise on a shift of 1: the event "release ≤ D0's Σy/c" has p0 = 1/2 and
    # p1 = e^-ε / 2 exactly, likelihood ratio e^ε. Predicted bound 0.94 (sd ≈ 0.02).
    predicted = _predicted_bound(0.5, 0.5 * math.exp(-EPSILON), 15_000)
    assert 0.75 * EPSILON < result.epsilon_lower_bound <= EPSILON
    assert result.epsilon_lower_bound == pytest.approx(predicted, abs=0.08)
    assert result.frequency_0 == pytest.approx(0.5, abs=0.02)
    assert result.frequency_1 == pytest.approx(0.5 * math.exp(-EPSILON), abs=0.02)


@pytest.mark.integration
def test_negative_control_bounded_poisson_with_half_sensitivity_is_caught():
    """Σy/c moves by 1 when one count goes from 0 to c; noise for Δ = 0.5 is 2ε-DP."""
    structure, d0, d1 = _poisson_link()
    result = audit_mechanism(
        _bounded_mechanism(_miscalibrated(structure, 0.5), 0.5),
        d0,
        d1,
        _poisson_event(d0),
        15_000,
        np.random.default_rng(2029),
        ALPHA,
    )
    # Laplace(0.5/ε): p0 = 1/2, p1 = e^-2ε / 2, predicted bound 1.91 (sd ≈ 0.03).
    predicted = _predicted_bound(0.5, 0.5 * math.exp(-2 * EPSILON), 15_000)
    assert 1.5 * EPSILON < result.epsilon_lower_bound <= 2 * EPSILON
    assert result.epsilon_lower_bound == pytest.approx(predicted, abs=0.15)


# Linear regression, p = 2 covariates: z = (1, x̃₁ − ½, x̃₂ − ½, ỹ − ½), D = 10 entries of the
# upper triangle of Σ z zᵀ; replace-one releases the 9 besides n (public), weighted by the
# budget split (c ⊙ T), with the exact replace-one Δ ≈ 0.640 (replace_one_maximiser), Laplace
# scale b = Δ/ε. Worst case: one record at every upper bound against one at w′ = a* − ½: the
# 9 coordinates move by 0.02–0.17 each, together the whole Δ.
#
# Event: K = #{moving coordinates on D1's side of D0's exact value} ≤ 2. Under D0, K ~
# Bin(9, ½): p0 = 46/512 = 0.0898. Under D1 coordinate j is on D0's side w.p. ½e^(−|δ_j|/b),
# so K is Poisson-binomial: p1 = 0.0486, and the bound at the expected counts of 15 000 runs
# is 0.48 (the full ratio e^ε needs K = 0, p0 = 2⁻⁹: too rare to measure).
#
# Broken control, noise for Δ/3 (b = Δ/(3ε), true ε = 3): p1 = 0.0138, predicted 1.66.


def _regression_link():
    import pymc as pm

    from pymc_dp.analysis import recognise
    from pymc_dp.families.second_moments import replace_one_maximiser

    rng = np.random.default_rng(12)
    x = rng.uniform(*REGRESSION_X_BOUNDS, size=(12, 2))
    y = rng.uniform(*REGRESSION_Y_BOUNDS, size=12)
    with pm.Model() as model:
        covariates = pm.Data("X", x)
        beta = pm.Normal("beta", 0.0, 5.0, shape=2)
        alpha = pm.Normal("alpha", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", mu=alpha + covariates @ beta, sigma=sigma, observed=y)
    bounds = {"y": REGRESSION_Y_BOUNDS, "X": REGRESSION_X_BOUNDS}
    link = recognise(model, "laplace", data_bounds=bounds).blocks["y"]
    structure = link.structure
    _, a = replace_one_maximiser(3, structure.family.weights(structure, "replace-one"))
    (x_low, x_high), (y_low, y_high) = REGRESSION_X_BOUNDS, REGRESSION_Y_BOUNDS
    worst_x = x_low + (x_high - x_low) * a[:2]  # w′ + ½ = a* on the unit scale
    worst_y = y_low + (y_high - y_low) * a[2]
    d0 = (np.append(y, worst_y), np.vstack([x, worst_x]))
    d1 = (np.append(y, y_high), np.vstack([x, [x_high, x_high]]))
    return structure, d0, d1


def _regression_released(structure, data):
    """The released statistics without noise, computed here from the definition: the
    family's weights times Σ z zᵀ of the centred records, without n."""
    y, x = data
    (x_low, x_high), (y_low, y_high) = REGRESSION_X_BOUNDS, REGRESSION_Y_BOUNDS
    z = np.column_stack(
        [np.ones(y.size), (x - x_low) / (x_high - x_low), (y - y_low) / (y_high - y_low)]
    )
    z[:, 1:] -= 0.5
    weights = structure.family.weights(structure, "replace-one")
    return ((z.T @ z)[np.triu_indices(4)] * weights)[1:]


REGRESSION_SENSITIVITY = 0.6401394422310758  # replace_one_maximiser(3, weights)


@pytest.mark.integration
def test_end_to_end_audit_bounded_regression_release():
    from pymc_dp.families.bounded import BoundedLink

    structure, d0, d1 = _regression_link()
    family = structure.family
    assert family.released_components(structure, "replace-one").tolist() == list(range(1, 10))
    # The family's statistics are the ones computed here, and the pair saturates Δ.
    weights = family.weights(structure, "replace-one")[1:]
    exact_0, exact_1 = _regression_released(structure, d0), _regression_released(structure, d1)
    for data, exact in ((d0, exact_0), (d1, exact_1)):
        target = BoundedLink(structure, data[0], covariates=data[1])
        np.testing.assert_allclose(family.statistics(target)[0, 1:] * weights, exact)
    assert np.abs(exact_1 - exact_0).sum() == pytest.approx(REGRESSION_SENSITIVITY, rel=1e-9)
    event, probabilities = _pair_event(exact_0, exact_1, most=2)
    result = audit_mechanism(
        _bounded_mechanism(structure, pytest.approx(REGRESSION_SENSITIVITY, rel=1e-12)),
        d0,
        d1,
        event,
        15_000,
        np.random.default_rng(2030),
        ALPHA,
    )
    p0, p1 = probabilities(REGRESSION_SENSITIVITY / EPSILON)
    predicted = _predicted_bound(p0, p1, 15_000)  # 0.48
    assert 0.25 * EPSILON < result.epsilon_lower_bound <= EPSILON
    assert result.epsilon_lower_bound == pytest.approx(predicted, abs=0.15)
    assert result.frequency_0 == pytest.approx(p0, abs=0.01)
    assert result.frequency_1 == pytest.approx(p1, abs=0.01)


@pytest.mark.integration
def test_negative_control_bounded_regression_with_a_third_of_the_sensitivity_is_caught():
    """Noise for Δ/3 instead of Δ is 3ε-DP: caught on the same worst pair and event."""
    structure, d0, d1 = _regression_link()
    third = REGRESSION_SENSITIVITY / 3
    exact_0, exact_1 = _regression_released(structure, d0), _regression_released(structure, d1)
    event, probabilities = _pair_event(exact_0, exact_1, most=2)
    result = audit_mechanism(
        _bounded_mechanism(_miscalibrated(structure, third), third),
        d0,
        d1,
        event,
        15_000,
        np.random.default_rng(2031),
        ALPHA,
    )
    p0, p1 = probabilities(third / EPSILON)
    predicted = _predicted_bound(p0, p1, 15_000)  # 1.66
    assert result.epsilon_lower_bound > 1.3 * EPSILON
    assert result.epsilon_lower_bound == pytest.approx(predicted, abs=0.3)


# --- cell counts (pymc_dp.families.cells): a record that changes its label and its outcome ----


def _cells_link():
    import pymc as pm

    from pymc_dp.analysis import recognise

    labels = np.array([0, 0, 1, 1, 2, 2, 0, 1])
    outcome = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    with pm.Model() as model:
        g = pm.Data("g", labels)
        z = pm.Normal("z", shape=3)
        pm.Bernoulli("y", logit_p=z[g], observed=outcome)
    structure = recognise(model, "laplace").blocks["y"].structure
    # worst case under replace-one: the last record moves from (cell 2, y = 1) to (cell 0,
    # y = 0): entry (2, 1) loses 1 and entry (0, 0) gains 1, L1 = 2, the whole stated Δ₁
    d0 = (np.append(outcome, 1), np.append(labels, 2))
    d1 = (np.append(outcome, 0), np.append(labels, 0))
    return structure, d0, d1


def _cells_table(structure, data):
    from pymc_dp.families.bounded import BoundedLink

    y, g = data
    return structure.family.statistics(BoundedLink(structure, y, groups=g[:, None])).ravel()


def _cells_mechanism(structure):
    from pymc_dp.families.bounded import BoundedLink
    from pymc_dp.mechanisms.statistics import release_bounded

    def mechanism(data, rng):
        y, g = data
        out = release_bounded(
            BoundedLink(structure, y, groups=g[:, None]),
            EPSILON,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
        )
        assert out.event.sensitivity == structure.family.sensitivity(structure, "replace-one")
        return out.noisy.ravel()

    return mechanism


@pytest.mark.integration
@pytest.mark.parametrize("broken", [False, True], ids=["stated", "half-sensitivity"])
def test_end_to_end_audit_cell_counts_release(broken):
    """The record's move changes the (3, 2) table by the whole stated Δ₁ = 2 in L1; the audit
    stays below ε with the stated sensitivity and catches noise calibrated to Δ₁/2 (2ε-DP)."""
    structure, d0, d1 = _cells_link()
    if broken:  # BROKEN on purpose: the family declares half its sensitivity
        structure = _miscalibrated(structure, 1.0)
    exact_0, exact_1 = _cells_table(structure, d0), _cells_table(structure, d1)
    assert np.abs(exact_1 - exact_0).sum() == 2.0
    event, probabilities = _pair_event(exact_0, exact_1)
    datasets = {0: d0, 1: d1}
    mechanism = _cells_mechanism(structure)
    result = audit_mechanism(
        lambda d, rng: mechanism(datasets[d], rng),
        0,
        1,
        event,
        15_000,
        np.random.default_rng(2030 + broken),
        ALPHA,
    )
    p0, p1 = probabilities(structure.family.sensitivity(structure, "replace-one") / EPSILON)
    assert result.frequency_0 == pytest.approx(p0, abs=0.02)
    assert result.frequency_1 == pytest.approx(p1, abs=0.02)
    if broken:
        assert result.epsilon_lower_bound > EPSILON  # predicted 2ε-DP: caught
    else:
        assert 0.75 * EPSILON < result.epsilon_lower_bound <= EPSILON
