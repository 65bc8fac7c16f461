"""pymc_dp.limits: the paper's worked numbers, and every reconstructed formula by brute force.

Reference values are from the digest of Bailie & Gong (``shared/seeds/digests``, PART B: Fig. 2 /
Example 4.4, eq. 8, Thm 8.7's application, Example 6.7). Formulas the digest marks [RECON]
are checked against their definitions: exact enumeration over small data spaces
(randomised response on {0, 1}^3, Laplace sums of binary records), exhaustive enumeration of
sets, events and tests, numerical integration, and seeded simulation with tolerances from
the Kolmogorov-Smirnov distribution.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import ClassVar

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from pymc_dp import PrivacyEvent, PrivacyLedger
from pymc_dp import limits as L
from pymc_dp.mechanisms.laplace import release_laplace

BITS3 = np.array(list(itertools.product((0, 1), repeat=3)))  # the 8 datasets of {0,1}^3
BITS4 = np.array(list(itertools.product((0, 1), repeat=4)))
RNG_SEED = 20240128


def _event(epsilon: float, delta: float = 0.0, neighbouring: str = "replace-one", **kw):
    return PrivacyEvent(
        mechanism="laplace" if delta == 0 else "gaussian",
        epsilon=epsilon,
        delta=delta,
        sensitivity=1.0,
        neighbouring=neighbouring,
        variables=("y",),
        noise_backend="opendp",
        **kw,
    )


def _laplace_density(t, q, epsilon):
    """p_q(t) of q + Laplace(1/ε), broadcasting t (last axis) against q (first axis)."""
    return stats.laplace.pdf(np.asarray(t)[None, :], loc=np.asarray(q)[:, None], scale=1 / epsilon)


def _rr_matrix(epsilon: float) -> np.ndarray:
    """P(T = t | x) for randomised response on {0,1}^3: rows x, columns t (both BITS3)."""
    return np.array([[L.randomised_response_pmf(t, x, epsilon) for t in BITS3] for x in BITS3])


def _random_model(rng, n_datasets: int, support_size: int) -> np.ndarray:
    """A random pmf on the datasets, positive on a random subset of ``support_size`` of them."""
    pmf = np.zeros(n_datasets)
    support = rng.choice(n_datasets, size=support_size, replace=False)
    pmf[support] = rng.dirichlet(np.ones(support_size))
    return pmf


def _diameter(datasets, pmfs) -> float:
    support = [datasets[i] for i in np.flatnonzero(np.sum(pmfs, axis=0) > 0)]
    return L.support_diameter(support)


# --- digest worked numbers -----------------------------------------------------------------


class TestFigure2:
    """Example 4.4 / Fig. 2: Laplace-privatised sum of n = 10 binary records, Δ = n."""

    @pytest.mark.parametrize(
        ("epsilon", "lower_on_0_10", "upper_at_5", "upper_at_0"),
        [(0.1, 0.01839, 0.08244, 0.05), (0.25, 0.01026, 0.4363, 0.125)],
    )
    def test_digest_values(self, epsilon, lower_on_0_10, upper_at_5, upper_at_0):
        inside = np.linspace(0, 10, 41)
        lower, upper = L.laplace_sum_bounds(inside, epsilon, 10)
        np.testing.assert_allclose(lower, lower_on_0_10, atol=5e-6)  # flat on [0, 10]
        assert L.laplace_sum_bounds(5.0, epsilon, 10).upper == pytest.approx(upper_at_5, abs=5e-5)
        assert L.laplace_sum_bounds(0.0, epsilon, 10).upper == pytest.approx(upper_at_0, rel=1e-12)
        assert upper.max() == pytest.approx(upper_at_5, abs=5e-5)  # peak at n/2

    def test_digest_values_at_minus_ten(self):
        lower, upper = L.laplace_sum_bounds(-10.0, 0.1, 10)
        assert lower == pytest.approx(0.00677, abs=5e-6)
        assert upper == pytest.approx(0.01839, abs=5e-6)

    def test_theorem_6_2_illustration(self):
        # "lower-bounded at 0.0184 whenever t in [0, 10], never exceeds 0.0824" (ε = 0.1);
        # "rises above 0.4" at ε = 0.25.
        t = np.linspace(-20, 30, 5001)
        low, up = L.laplace_sum_bounds(t, 0.1, 10)
        assert round(low[(t >= 0) & (t <= 10)].min(), 4) == 0.0184
        assert round(up.max(), 4) == 0.0824
        assert L.laplace_sum_bounds(t, 0.25, 10).upper.max() > 0.4

    @pytest.mark.parametrize("epsilon", [0.1, 0.25])
    def test_matches_the_authors_figure_code(self, epsilon):
        n, t = 10, np.linspace(-2 * 10, 3 * 10, 2001)
        half = 0.5 * epsilon * np.exp(-epsilon * np.abs(t - n / 2))
        code_upper = half * np.exp(epsilon * n / 2)
        code_lower = np.exp(-epsilon * n / 2) * np.minimum(
            half, 0.5 * epsilon * np.exp(-epsilon * n / 2)
        )
        lower, upper = L.laplace_sum_bounds(t, epsilon, n)
        np.testing.assert_allclose(upper, code_upper, rtol=1e-13)
        np.testing.assert_allclose(lower, code_lower, rtol=1e-13)

    @pytest.mark.parametrize("epsilon", [0.1, 0.25])
    def test_closed_form_extremes_equal_a_dense_search_over_q(self, epsilon):
        t = np.linspace(-20, 30, 301)
        q = np.union1d(np.linspace(0, 10, 10_001), t[(t >= 0) & (t <= 10)])  # extremes on it
        densities = _laplace_density(t, q, epsilon)
        brute = L.privatised_data_bounds(densities, epsilon, 10)
        closed = L.laplace_sum_bounds(t, epsilon, 10)
        np.testing.assert_allclose(closed.lower, brute.lower, rtol=1e-12)
        np.testing.assert_allclose(closed.upper, brute.upper, rtol=1e-12)

    def test_smaller_epsilon_gives_narrower_bounds(self):
        t = np.linspace(0, 10, 11)
        narrow = L.laplace_sum_bounds(t, 0.1, 10)
        wide = L.laplace_sum_bounds(t, 0.25, 10)
        assert np.all(narrow.upper / narrow.lower < wide.upper / wide.lower)


class TestRandomisedResponseTable:
    """Example 4.5, eq. 8: (1 + e^ε)^{-n} <= p_θ(t) <= (e^ε/(1 + e^ε))^n at ε = 1 (Fig. 3)."""

    TABLE: ClassVar = [
        (1, 0.26894, 0.73106),
        (2, 0.072329, 0.53445),
        (3, 0.019452, 0.39071),
        (4, 5.2316e-3, 0.28563),
        (5, 1.4070e-3, 0.20881),
        (6, 3.7840e-4, 0.15266),
        (7, 1.0177e-4, 0.11160),
        (8, 2.7369e-5, 0.081586),
        (9, 7.3607e-6, 0.059644),
        (10, 1.9796e-6, 0.043604),
    ]

    @pytest.mark.parametrize(("n", "lower", "upper"), TABLE)
    def test_table_row(self, n, lower, upper):
        bounds = L.randomised_response_bounds(1.0, n)
        assert bounds.lower == pytest.approx(lower, rel=5e-5)
        assert bounds.upper == pytest.approx(upper, rel=5e-5)

    def test_vectorised_over_n_and_gap_narrows(self):
        lower, upper = L.randomised_response_bounds(1.0, np.arange(1, 11))
        np.testing.assert_allclose(lower, [row[1] for row in self.TABLE], rtol=5e-5)
        gap = np.diff(upper - lower)  # equal for n = 1, 2 ((e − 1)/(e + 1)), then narrowing
        assert gap[0] == pytest.approx(0, abs=1e-15) and np.all(gap[1:] < 0)
        assert np.all(np.diff(upper) < 0)

    @pytest.mark.parametrize("n", [1, 2, 3, 4])
    @pytest.mark.parametrize("epsilon", [0.3, 1.0, 2.5])
    def test_eq8_is_the_extremes_over_all_datasets(self, n, epsilon):
        """Brute force: for every t in {0,1}^n, min and max over x of p_x(t) are eq. 8."""
        cube = np.array(list(itertools.product((0, 1), repeat=n)))
        pmf = np.array([[L.randomised_response_pmf(t, x, epsilon) for t in cube] for x in cube])
        bounds = L.randomised_response_bounds(epsilon, n)
        np.testing.assert_allclose(pmf.min(axis=0), bounds.lower, rtol=1e-12)
        np.testing.assert_allclose(pmf.max(axis=0), bounds.upper, rtol=1e-12)
        # ... and Thm 4.1 with Δ = n (the Hamming diameter of {0,1}^n) gives the same numbers
        theorem = L.privatised_data_bounds(pmf, epsilon, L.support_diameter(cube))
        np.testing.assert_allclose(theorem.lower, bounds.lower, rtol=1e-12)
        np.testing.assert_allclose(theorem.upper, bounds.upper, rtol=1e-12)

    def test_flip_probability_is_one_over_one_plus_e_to_the_epsilon(self):
        assert L.randomised_response_pmf([1], [0], 1.0) == pytest.approx(1 / (1 + math.e))
        assert L.randomised_response_pmf([0, 1], [0, 1], 1.0) == pytest.approx(
            (math.e / (1 + math.e)) ** 2
        )


class TestPaperStatements:
    def test_theorem_8_7_application_power_at_most_005_e_to_the_epsilon(self):
        for epsilon in (0.5, 1.0, 2.0):
            assert L.power_bounds(0.05, epsilon, 1).upper == pytest.approx(0.05 * math.exp(epsilon))

    def test_figure_1_laplace_ratio_is_exactly_e_to_the_epsilon_left_of_qx(self):
        # q(x) = 10, q(x') = 11, sensitivity 1, ε = 2: for t < 10, p_x(t) / p_x'(t) = e^ε.
        t = np.linspace(8, 13, 501)
        p = _laplace_density(t, [10.0, 11.0], 2.0)
        left = t < 10
        np.testing.assert_allclose(p[0, left] / p[1, left], math.exp(2.0), rtol=1e-12)
        assert L.multiplicative_distance(p[0], p[1]) == pytest.approx(2.0, rel=1e-12)
        assert L.ratio_bounds(2.0, 1) == pytest.approx((math.exp(-2), math.exp(2)))

    def test_gong_meng_single_record_and_analyst_bounds(self):
        # Δ = 1: e^{-ε} Π(A) <= Π(A | t) <= e^{ε} Π(A); Δ = n: e^{±εn}.
        assert L.posterior_bounds(0.1, 0.5, 1) == pytest.approx(
            (0.1 * math.exp(-0.5), 0.1 * math.exp(0.5))
        )
        assert L.posterior_bounds(0.01, 0.5, 4) == pytest.approx(
            (0.01 * math.exp(-2), 0.01 * math.exp(2))
        )
        assert L.posterior_bounds(0.5, 0.5, 4).upper == 1.0  # clipped


# --- distances: Δ between datasets, d_MULT and d_R between measures ------------------------


class TestDatasetDistances:
    def test_hamming_and_symmetric_difference(self):
        assert L.dataset_distance([0, 1, 1], [1, 1, 0]) == 2
        assert L.dataset_distance([0, 1, 1], [1, 1]) == math.inf  # bounded DP: unconnected
        assert L.dataset_distance([0, 1, 1], [1, 1, 0], "symmetric-difference") == 0
        assert L.dataset_distance([0, 1, 1], [1, 1], "add-remove-one") == 1
        assert L.dataset_distance([[0, 1], [1, 1]], [[0, 1], [1, 0]], "replace-one") == 1

    def test_diameter_helpers_agree_with_brute_force(self):
        assert L.support_diameter(BITS3) == 3 == L.data_diameter(3, "hamming")
        # multisets over {0, 1, 2} with at most 3 records: diameter 2·3 (symmetric difference)
        multisets = [
            list(c) for k in range(4) for c in itertools.combinations_with_replacement(range(3), k)
        ]
        assert L.support_diameter(multisets, "symmetric-difference") == 6
        assert L.data_diameter(3, "add-remove-one") == 6
        # an attacker who knows all records but k: Hamming diameter k
        known = [np.r_[bits, [1, 0, 1]] for bits in itertools.product((0, 1), repeat=2)]
        assert L.support_diameter(known) == 2 == L.data_diameter(2)
        assert L.data_diameter(math.inf) == math.inf
        assert L.support_diameter([[0, 1]]) == 0

    def test_metric_from_a_ledger(self):
        assert L.data_diameter(5, PrivacyLedger(events=[_event(1.0)])) == 5
        add_remove = PrivacyLedger(events=[_event(1.0, neighbouring="add-remove-one")])
        assert L.data_diameter(5, add_remove) == 10
        mixed = PrivacyLedger(events=[_event(1.0), _event(1.0, neighbouring="add-remove-one")])
        with pytest.raises(ValueError, match="mix neighbouring relations"):
            L.neighbouring_metric(mixed)
        with pytest.raises(ValueError, match="no events"):
            L.neighbouring_metric(PrivacyLedger())
        with pytest.raises(ValueError, match="metric must be one of"):
            L.data_diameter(3, "euclidean")
        with pytest.raises(ValueError, match="records"):
            L.data_diameter(-1)


def _subsets(k: int):
    return [np.array(mask, dtype=bool) for mask in itertools.product((0, 1), repeat=k)]


def _set_d_mult(p, q) -> float:
    """sup over all sets S of |log p(S)/q(S)|, 0/0 := 1 (the definition, §2)."""
    best = 0.0
    for s in _subsets(len(p)):
        a, b = p[s].sum(), q[s].sum()
        if a == 0 and b == 0:
            continue
        if a == 0 or b == 0:
            return math.inf
        best = max(best, abs(math.log(a / b)))
    return best


def _set_d_r(p, q) -> float:
    """sup over pairs of sets of log[p(A) q(B) / (p(B) q(A))] (Prop. E.11, eq. 34)."""
    best = 0.0
    sets = [s for s in _subsets(len(p)) if p[s].sum() > 0 or q[s].sum() > 0]
    for a, b in itertools.product(sets, repeat=2):
        num, den = p[a].sum() * q[b].sum(), p[b].sum() * q[a].sum()
        if num == 0 and den == 0:
            continue
        if den == 0:
            return math.inf
        if num > 0:
            best = max(best, math.log(num / den))
    return best


class TestMeasureDistances:
    def test_closed_forms_equal_the_set_definitions(self):
        rng = np.random.default_rng(RNG_SEED)
        for _ in range(40):
            p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.full(5, 0.7))
            assert L.multiplicative_distance(p, q) == pytest.approx(_set_d_mult(p, q), rel=1e-12)
            assert L.density_ratio_distance(p, q) == pytest.approx(_set_d_r(p, q), rel=1e-12)

    def test_zeros(self):
        p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.75, 0.0])
        assert L.multiplicative_distance(p, q) == pytest.approx(_set_d_mult(p, q))
        assert L.density_ratio_distance(p, q) == pytest.approx(_set_d_r(p, q))
        r = np.array([0.5, 0.0, 0.5])
        assert L.multiplicative_distance(p, r) == math.inf == _set_d_mult(p, r)
        assert L.density_ratio_distance(p, r) == math.inf == _set_d_r(p, r)
        assert L.multiplicative_distance(np.zeros(2), np.zeros(2)) == 0.0
        logs = np.log([0.5, 0.5]), np.log([0.25, 0.75])
        assert L.multiplicative_distance(*logs, log=True) == pytest.approx(math.log(2))

    def test_lemma_3_4_ball_is_the_interval_of_measures(self):
        rng = np.random.default_rng(RNG_SEED + 1)
        for _ in range(20):
            p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
            d = L.multiplicative_distance(p, q)
            for radius, inside in ((d, True), (0.999 * d, False)):
                member = all(
                    math.exp(-radius) * q[s].sum() <= p[s].sum() * (1 + 1e-12)
                    and p[s].sum() <= math.exp(radius) * q[s].sum() * (1 + 1e-12)
                    for s in _subsets(4)
                )
                assert member is inside

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.floats(1e-3, 1.0), min_size=2, max_size=6), st.integers(0, 2**31))
    def test_prop_e17_inequalities(self, weights, seed):
        p = np.array(weights) / np.sum(weights)
        q = np.random.default_rng(seed).dirichlet(np.ones(len(p)))
        d_mult, d_r = L.measure_distances(p, q)
        assert d_mult <= d_r * (1 + 1e-12) + 1e-15
        assert d_r <= 2 * d_mult * (1 + 1e-12) + 1e-15

    def test_prop_e17_inequalities_are_attained(self):
        p = np.array([0.2, 0.8])
        d_mult, d_r = L.measure_distances(p, p[::-1])
        assert d_r == pytest.approx(2 * d_mult, rel=1e-12)  # second: attained exactly
        ratios = []
        for eta in (1e-2, 1e-4, 1e-6):  # first: attained in the limit η → 0
            d_mult, d_r = L.measure_distances([1 - 3 * eta, 3 * eta], [1 - eta, eta])
            ratios.append(d_r / d_mult)
        assert ratios[-1] == pytest.approx(1.0, abs=1e-5) and ratios[0] > ratios[-1]

    def test_general_measures_check_only_the_second_inequality(self):
        d_mult, d_r = L.measure_distances([2.0, 2.0], [1.0, 1.0])  # not probabilities
        assert d_mult == pytest.approx(math.log(2)) and d_r == 0.0

    def test_randomised_response_is_epsilon_lipschitz_in_hamming_distance(self):
        """Def. 2.1 / Thm 3.5 by brute force: d_MULT(P_x, P_x') = ε d_H(x, x') for RR."""
        epsilon = 0.7
        laws = _rr_matrix(epsilon)
        for i, j in itertools.product(range(8), repeat=2):
            d = L.dataset_distance(BITS3[i], BITS3[j])
            assert L.multiplicative_distance(laws[i], laws[j]) == pytest.approx(
                epsilon * d, abs=1e-12
            )

    def test_bad_input(self):
        with pytest.raises(ValueError, match="same shape"):
            L.multiplicative_distance([0.5, 0.5], [1.0])
        with pytest.raises(ValueError, match=">= 0"):
            L.density_ratio_distance([-0.1, 1.1], [0.5, 0.5])
        with pytest.raises(ValueError, match="-inf"):
            L.multiplicative_distance([np.nan, 0.0], [0.0, 0.0], log=True)


# --- ε from a ledger or a trace ------------------------------------------------------------


class TestPureEpsilon:
    def test_number_ledger_and_trace(self):
        ledger = PrivacyLedger(events=[_event(0.25), _event(0.5)])
        assert L.pure_epsilon(0.3) == 0.3
        assert L.pure_epsilon(ledger) == pytest.approx(0.75)
        idata = ledger.attach(xr.DataTree())
        assert L.pure_epsilon(idata) == pytest.approx(0.75)
        assert L.pure_epsilon(PrivacyLedger()) == 0.0  # nothing released
        parallel = PrivacyLedger(events=[_event(0.5, partition="a"), _event(0.5, partition="a")])
        assert L.pure_epsilon(parallel) == pytest.approx(0.5)

    def test_refuses_delta_without_data_values(self):
        secret = "count was 48213"
        ledger = PrivacyLedger(events=[_event(0.5, statistic=secret), _event(1.0, 1e-6)])
        for source in (ledger, ledger.attach(xr.DataTree())):
            with pytest.raises(ValueError, match="pure epsilon-DP") as info:
                L.posterior_bounds(0.1, source, 1)
            message = str(info.value)
            assert "delta is 1e-06" in message and "gaussian" in message
            assert "48213" not in message

    def test_trace_without_ledger(self):
        with pytest.raises(ValueError, match="no privacy ledger"):
            L.pure_epsilon(xr.DataTree())

    def test_unverified_assumption_warns(self):
        ledger = PrivacyLedger(events=[_event(1.0, unverified_assumption="secret generator")])
        with pytest.warns(L.UnverifiedEpsilonWarning):
            assert L.pure_epsilon(ledger) == 1.0

    @pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan, True])
    def test_bad_numbers(self, bad):
        with pytest.raises(ValueError, match="epsilon"):
            L.pure_epsilon(bad)

    def test_empty_ledger_leaves_the_prior_unmoved_unless_unconnected(self):
        assert L.posterior_bounds(0.3, PrivacyLedger(), 10) == (0.3, 0.3)
        assert L.posterior_bounds(0.3, PrivacyLedger(), math.inf) == (0.0, 1.0)  # 0·∞ = ∞


# --- brute force: Thm 4.1, 6.2, 6.4 on small data spaces -----------------------------------


class TestPrivatisedDataBoundsBruteForce:
    @pytest.mark.parametrize("support_size", [1, 3, 8])
    def test_randomised_response_any_data_model(self, support_size):
        rng = np.random.default_rng(RNG_SEED + support_size)
        epsilon = 0.8
        laws = _rr_matrix(epsilon)
        for _ in range(25):
            model = _random_model(rng, 8, support_size)
            support = np.flatnonzero(model > 0)
            delta_records = L.support_diameter(BITS3[support])
            p_theta = model @ laws  # exact P_θ(T = t) for all 8 outputs, eq. 6
            for sharp in (False, True):
                low, up = L.privatised_data_bounds(
                    laws[support], epsilon, delta_records, sharp=sharp
                )
                assert np.all(low <= p_theta * (1 + 1e-12)) and np.all(p_theta <= up * (1 + 1e-12))
            # Lemma F.7: any one dataset of the support bounds p_θ within e^{±εΔ}
            one = L.privatised_data_bounds(laws[support[:1]], epsilon, delta_records)
            assert np.all(one.lower <= p_theta * (1 + 1e-12)) and np.all(
                p_theta <= one.upper * (1 + 1e-12)
            )

    def test_laplace_sum_any_data_model_on_four_records(self):
        rng = np.random.default_rng(RNG_SEED + 11)
        epsilon, t = 0.4, np.linspace(-8, 12, 201)
        sums = BITS4.sum(axis=1)
        densities = _laplace_density(t, sums, epsilon)  # p_x(t) for all 16 datasets
        for _ in range(25):
            model = _random_model(rng, 16, int(rng.integers(1, 17)))
            support = np.flatnonzero(model > 0)
            delta_records = L.support_diameter(BITS4[support])
            p_theta = model @ densities
            low, up = L.privatised_data_bounds(densities[support], epsilon, delta_records)
            assert np.all(low <= p_theta * (1 + 1e-12)) and np.all(p_theta <= up * (1 + 1e-12))
        # Fig. 2's bounds (Δ = n, q over [0, n]) contain every model on {0,1}^4 too
        fig = L.laplace_sum_bounds(t, epsilon, 4)
        for _ in range(25):
            p_theta = rng.dirichlet(np.ones(16)) @ densities
            assert np.all(fig.lower <= p_theta) and np.all(p_theta <= fig.upper)

    def test_prior_predictive_any_prior_and_models(self):
        rng = np.random.default_rng(RNG_SEED + 12)
        epsilon = 1.3
        laws = _rr_matrix(epsilon)
        for _ in range(25):
            models = np.stack([_random_model(rng, 8, int(rng.integers(1, 9))) for _ in range(5)])
            prior = rng.dirichlet(np.ones(5))
            predictive = prior @ models @ laws  # P_Π(T = t), eq. 11's left side
            union = np.flatnonzero(prior @ models > 0)
            delta_records = L.support_diameter(BITS3[union])
            low, up = L.prior_predictive_bounds(laws[union], epsilon, delta_records)
            assert np.all(low <= predictive * (1 + 1e-12)) and np.all(
                predictive <= up * (1 + 1e-12)
            )

    def test_lower_bound_is_tight_when_the_model_concentrates(self):
        # §9: P_θ a point mass on the x attaining the sup gives p_θ(t) = e^{εΔ} l(t).
        epsilon = 0.5
        densities = _laplace_density([-3.0], [0.0, 1.0, 2.0], epsilon)
        low, up = L.privatised_data_bounds(densities, epsilon, 2)
        assert densities[0, 0] == pytest.approx(low[0] * math.exp(epsilon * 2))
        assert densities[2, 0] == pytest.approx(up[0] * math.exp(-epsilon * 2))

    def test_inconsistent_densities_are_refused(self):
        densities = _laplace_density([-3.0], [0.0, 3.0], 1.0)  # ratio e^3 over "Δ = 1"
        with pytest.raises(ValueError, match="not those of an epsilon-DP mechanism"):
            L.privatised_data_bounds(densities, 1.0, 1)


class TestPosteriorBoundsBruteForce:
    @pytest.mark.parametrize("mechanism", ["randomised-response", "laplace-sum"])
    def test_every_event_every_output(self, mechanism):
        """Thm 6.4 and the odds form: exact posteriors over a finite Θ, all 16 events."""
        rng = np.random.default_rng(RNG_SEED + 21)
        epsilon = 0.6
        if mechanism == "randomised-response":
            laws = _rr_matrix(epsilon)  # (x, t) over all 8 outputs
        else:
            laws = _laplace_density(np.linspace(-6, 9, 61), BITS3.sum(axis=1), epsilon)
        events = _subsets(4)
        for _ in range(15):
            models = np.stack([_random_model(rng, 8, int(rng.integers(1, 9))) for _ in range(4)])
            prior = rng.dirichlet(np.full(4, 0.5))
            union = np.flatnonzero(prior @ models > 0)
            delta_records = L.support_diameter(BITS3[union])
            likelihood = models @ laws  # p_θ(t), rows θ
            posterior = prior[:, None] * likelihood
            posterior /= posterior.sum(axis=0)
            for a in events:
                prior_a = prior[a].sum()
                post_a = posterior[a].sum(axis=0)
                for sharp in (False, True):
                    low, up = L.posterior_bounds(prior_a, epsilon, delta_records, sharp=sharp)
                    assert np.all(low <= post_a + 1e-12) and np.all(post_a <= up + 1e-12)
            # the density form: posterior / prior within e^{±εΔ} at every θ
            ratio = posterior / prior[:, None]
            lo, hi = L.ratio_bounds(epsilon, delta_records)
            assert np.all(ratio >= lo * (1 - 1e-12)) and np.all(ratio <= hi * (1 + 1e-12))

    def test_sharp_form_is_never_wider(self):
        p = np.linspace(0, 1, 101)
        for radius in (0.1, 1.0, 5.0):
            wide = L.posterior_bounds(p, radius, 1)
            sharp = L.posterior_bounds(p, radius, 1, sharp=True)
            assert np.all(sharp.lower >= wide.lower - 1e-15)
            assert np.all(sharp.upper <= wide.upper + 1e-15)

    def test_section_9_construction_attains_the_bound(self):
        """n = 1, P_θ = δ_0 on A and δ_1 off A, Laplace count: for t <= 0 the likelihood ratio
        is exactly e^ε, Π(A | t) equals the odds-form upper bound, and Π(A | t)/Π(A) → e^ε."""
        epsilon = 1.0
        t = -0.5
        like_a, like_not = _laplace_density([t], [0.0, 1.0], epsilon)[:, 0]
        for prior_a in (0.3, 1e-3, 1e-7):
            post = prior_a * like_a / (prior_a * like_a + (1 - prior_a) * like_not)
            assert post == pytest.approx(L.posterior_bounds(prior_a, epsilon, 1, sharp=True).upper)
            assert post <= L.posterior_bounds(prior_a, epsilon, 1).upper
        assert post / prior_a == pytest.approx(math.e, rel=1e-6)

    def test_labels_are_kept(self):
        prior = xr.DataArray([0.1, 0.6], coords={"event": ["a", "b"]}, dims="event")
        _, up = L.posterior_bounds(prior, 1.0, 1)
        assert isinstance(up, xr.DataArray) and list(up.event.values) == ["a", "b"]
        assert float(up.sel(event="b")) == 1.0
        sharp = L.posterior_bounds(prior, 1.0, 1, sharp=True)
        assert isinstance(sharp.lower, xr.DataArray)


# --- test power: Thm 5.1, Cor. 5.3, Thm 8.7 -------------------------------------------------


class TestPowerBounds:
    def test_every_test_on_randomised_response_outputs(self):
        """All 256 deterministic tests and 500 randomised ones on the 8 outputs of RR on
        {0,1}^3, composite hypotheses of random data models: every size-α test's power lies
        in Cor. 5.3's bounds (and the complementary ones) with Δ the largest distance between
        a dataset possible under H0 and one possible under H1."""
        rng = np.random.default_rng(RNG_SEED + 31)
        epsilon = 0.5
        laws = _rr_matrix(epsilon)
        tests = np.array(list(itertools.product((0.0, 1.0), repeat=8)))
        tests = np.vstack([tests, rng.uniform(size=(500, 8))])
        for _ in range(12):
            h0 = np.stack([_random_model(rng, 8, int(rng.integers(1, 4))) for _ in range(2)])
            h1 = np.stack([_random_model(rng, 8, int(rng.integers(1, 4))) for _ in range(2)])
            s0, s1 = np.flatnonzero(h0.sum(0)), np.flatnonzero(h1.sum(0))
            delta_records = max(L.dataset_distance(BITS3[i], BITS3[j]) for i in s0 for j in s1)
            size = (h0 @ laws @ tests.T).max(axis=0)  # sup over H0 of E φ
            power = h1 @ laws @ tests.T  # at each alternative
            for kind in ("level", "size"):
                low, up = L.power_bounds(size, epsilon, delta_records, kind=kind, sharp=True)
                assert np.all(power <= up + 1e-12) and np.all(power >= low - 1e-12)

    def test_neyman_pearson_laplace_attains_both_upper_bounds(self):
        """§9: point masses at counts 0 (H0) and Δ (H1), Laplace(1/ε), reject t >= c. For
        α <= e^{-εΔ}/2 the power is exactly e^{εΔ}α; for α >= 1/2, exactly
        1 − e^{-εΔ}(1 − α), the complementary bound (sharp=True)."""
        epsilon, delta_records = 0.7, 3
        h0, h1 = stats.laplace(0, 1 / epsilon), stats.laplace(delta_records, 1 / epsilon)
        for c in (3.0, 5.0, 12.0):  # c >= Δ: small α
            alpha, power = h0.sf(c), h1.sf(c)
            assert power == pytest.approx(L.power_bounds(alpha, epsilon, delta_records).upper)
            assert power == pytest.approx(math.exp(epsilon * delta_records) * alpha, rel=1e-12)
        for c in (-4.0, -1.0, 0.0):  # c <= 0: large α
            alpha, power = h0.sf(c), h1.sf(c)
            sharp = L.power_bounds(alpha, epsilon, delta_records, sharp=True).upper
            assert power == pytest.approx(sharp, rel=1e-12)
            assert power < L.power_bounds(alpha, epsilon, delta_records).upper
        for c in np.linspace(-5, 10, 61):  # everywhere: inside the sharp size-α bounds
            alpha, power = h0.sf(c), h1.sf(c)
            low, up = L.power_bounds(alpha, epsilon, delta_records, kind="size", sharp=True)
            assert low - 1e-12 <= power <= up + 1e-12

    def test_wasserman_zhou_k_records(self):
        # testing k records: Δ = k, power <= e^{kε}α
        assert L.power_bounds(0.01, 0.2, L.data_diameter(3)).upper == pytest.approx(
            0.01 * math.exp(0.6)
        )

    def test_shapes_and_errors(self):
        low, up = L.power_bounds(np.array([0.0, 0.05, 1.0]), 1.0, 2, kind="size")
        np.testing.assert_allclose(low, [0.0, 0.05 * math.exp(-2), math.exp(-2)])
        np.testing.assert_allclose(up, [0.0, 0.05 * math.exp(2), 1.0])
        with pytest.raises(ValueError, match="kind"):
            L.power_bounds(0.05, 1.0, 1, kind="exact")
        with pytest.raises(ValueError, match="alpha"):
            L.power_bounds(1.5, 1.0, 1)


# --- Pufferfish: eq. 17, Thm 8.5, Remark 8.6 ------------------------------------------------


def _independent_prior(rng, n: int) -> np.ndarray:
    """A pmf on {0,1}^n under which the records are independent (Remark 8.6's Θ)."""
    p = rng.uniform(0.05, 0.95, size=n)
    cube = np.array(list(itertools.product((0, 1), repeat=n)))
    return np.prod(np.where(cube == 1, p, 1 - p), axis=1)


class TestPufferfish:
    @pytest.mark.parametrize("mechanism", ["randomised-response", "laplace-sum"])
    def test_independent_records_satisfy_eq17_and_thm_8_5(self, mechanism):
        rng = np.random.default_rng(RNG_SEED + 41)
        epsilon = 0.9
        if mechanism == "randomised-response":
            laws = _rr_matrix(epsilon)
        else:
            laws = _laplace_density(np.linspace(-6, 9, 61), BITS3.sum(axis=1), epsilon)
        for _ in range(20):
            prior = _independent_prior(rng, 3)
            joint = prior[:, None] * laws
            posterior = joint / joint.sum(axis=0)
            for record in range(3):
                cells = [BITS3[:, record] == a for a in (0, 1)]
                prior_cells = np.array([prior[c].sum() for c in cells])
                post_cells = np.array([posterior[c].sum(axis=0) for c in cells])
                low, up = L.pufferfish_odds_bounds(prior_cells[1] / prior_cells[0], epsilon)
                post_odds = post_cells[1] / post_cells[0]
                assert np.all(low <= post_odds * (1 + 1e-12)) and np.all(
                    post_odds <= up * (1 + 1e-12)
                )
                for column in range(post_cells.shape[1]):
                    check = L.pufferfish_posterior_check(
                        prior_cells, post_cells[:, column], epsilon
                    )
                    assert check.holds, check

    def test_correlated_records_break_the_equivalence(self):
        """Remark 8.6: with perfectly correlated records an ε-DP sum moves record 1's odds by
        e^{3ε}, outside eq. 17's e^{ε}: ε-DP is not ε-Pufferfish for that Θ."""
        epsilon = 0.5
        prior = np.zeros(8)
        prior[0] = prior[7] = 0.5  # all zeros or all ones
        laws = _laplace_density([-1.0], BITS3.sum(axis=1), epsilon)[:, 0]
        posterior = prior * laws / (prior * laws).sum()
        post_odds = posterior[7] / posterior[0]
        assert post_odds == pytest.approx(math.exp(-3 * epsilon))
        low, _ = L.pufferfish_odds_bounds(1.0, epsilon)
        assert post_odds < low
        cells = np.array([posterior[0], posterior[7]])
        check = L.pufferfish_posterior_check([0.5, 0.5], cells, epsilon)
        assert not check.holds and check.density_ratio_distance == pytest.approx(3 * epsilon)
        # ... while the DP bound with Δ = 3 (all three records unknown) still holds
        assert L.pufferfish_odds_bounds(1.0, epsilon, distance=3).lower == pytest.approx(post_odds)

    def test_thm_8_7_power_for_record_values(self):
        """Size-α tests of x_1 = 0 against x_1 = 1 (others independent, integrated out) on RR
        outputs: every one of the 256 deterministic tests has power in e^{±ε}α."""
        rng = np.random.default_rng(RNG_SEED + 42)
        epsilon = 0.8
        laws = _rr_matrix(epsilon)
        tests = np.array(list(itertools.product((0.0, 1.0), repeat=8)))
        for _ in range(10):
            prior = _independent_prior(rng, 3)
            given = [np.where(BITS3[:, 0] == a, prior, 0.0) for a in (0, 1)]
            h0, h1 = (g / g.sum() @ laws for g in given)
            size, power = h0 @ tests.T, h1 @ tests.T
            low, up = L.power_bounds(size, epsilon, 1, kind="size")
            assert np.all(low <= power + 1e-12) and np.all(power <= up + 1e-12)

    def test_vacuous_and_errors(self):
        assert L.pufferfish_odds_bounds(2.0, 1.0, math.inf) == (0.0, math.inf)
        assert L.pufferfish_odds_bounds(0.0, 1.0, math.inf) == (0.0, 0.0)
        with pytest.raises(ValueError, match="prior_odds"):
            L.pufferfish_odds_bounds(-1.0, 1.0)


# --- Δ = ∞, validation ----------------------------------------------------------------------


class TestVacuousAndValidation:
    def test_infinite_distance_is_vacuous_not_an_error(self):
        inf = math.inf
        low, up = L.posterior_bounds([0.0, 0.3, 1.0], 1.0, inf)
        assert list(low) == [0, 0, 0] and list(up) == [0, 1, 1]  # Π(A) = 0 stays 0 (Bayes)
        low, up = L.posterior_density_bounds([0.0, 2.0], 1.0, inf)
        assert list(low) == [0, 0] and list(up) == [0, inf]
        low, up = L.power_bounds([0.0, 0.05], 1.0, inf, kind="size", sharp=True)
        assert list(low) == [0, 0] and list(up) == [1, 1]
        low, up = L.privatised_data_bounds([[0.2, 0.0], [0.1, 0.0]], 1.0, inf)
        assert np.all(low == 0) and np.all(up == inf)
        assert L.ratio_bounds(1.0, inf) == (0.0, inf)
        assert L.laplace_sum_bounds(0.0, 0.1, 10, inf) == (0.0, inf)

    def test_huge_finite_radius_does_not_give_nan(self):
        low, up = L.posterior_bounds([0.0, 0.5], 1.0, 1e6)
        assert list(up) == [0.0, 1.0] and list(low) == [0.0, 0.0]
        assert L.power_bounds(0.0, 1.0, 1e6).upper == 0.0

    @pytest.mark.parametrize("distance", [-1, math.nan, "three", True])
    def test_bad_distance(self, distance):
        with pytest.raises((ValueError, TypeError)):
            L.posterior_bounds(0.5, 1.0, distance)

    def test_bad_probabilities_report_counts_not_values(self):
        with pytest.raises(ValueError, match="2 of 3 entries") as info:
            L.posterior_bounds([0.5, 1.25, -7.5], 1.0, 1)
        assert "1.25" not in str(info.value) and "7.5" not in str(info.value)
        with pytest.raises(ValueError, match="finite and >= 0"):
            L.posterior_density_bounds([1.0, -2.0], 1.0, 1)
        with pytest.raises(ValueError, match="empty"):
            L.posterior_bounds([], 1.0, 1)


# --- Example 6.7: privatised single count, PyMC model, exact posterior ----------------------

EX67 = {"epsilon": 1.0, "alpha": 3.0, "rate": 1.0, "lower": 0, "upper": 6}


def _prior_density(theta):
    return stats.gamma.pdf(theta, EX67["alpha"], scale=1 / EX67["rate"])


@pytest.fixture(scope="module")
def example67_prior_draws() -> xr.DataTree:
    """2,000 prior predictive draws (θ, s) of Example 6.7's PyMC model, seed 10 as Fig. 4.

    The prior predictive does not depend on the observed value, so one set of draws serves
    every test. Python-mode compilation: the draws take a second instead of a C compile."""
    model = L.privatised_count_model(None, EX67["epsilon"])
    return pm.sample_prior_predictive(
        2000, model=model, random_seed=10, compile_kwargs={"mode": "FAST_COMPILE"}
    )


class TestExample67:
    def test_setting(self):
        # scale 6/ε, sd 6√2/ε = 8.485 at ε = 1; one record, so Δ = 1 and the factor is e^{±1}
        scale = (EX67["upper"] - EX67["lower"]) / EX67["epsilon"]
        assert math.sqrt(2) * scale == pytest.approx(8.485, abs=5e-4)
        assert L.data_diameter(1) == 1
        assert L.ratio_bounds(EX67["epsilon"], 1) == pytest.approx((1 / math.e, math.e))

    def test_pymc_model_logp_is_the_exact_likelihood(self):
        released = 2.7
        model = L.privatised_count_model(released, EX67["epsilon"])
        logp = model.compile_logp(vars=[model["released"]])
        theta = np.array([0.05, 0.7, 2.0, 5.5, 14.0])
        got = [logp({"theta_log__": np.log(th)}) for th in theta]
        want = L.privatised_count_loglikelihood(released, theta, EX67["epsilon"])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)

    def test_likelihood_sums_the_latent_count_exactly(self):
        theta, s, b = 3.3, -1.2, 6.0
        counts = np.arange(0, 200)
        brute = np.sum(
            stats.poisson.pmf(counts, theta) * stats.laplace.pdf(s, np.clip(counts, 0, 6), b)
        )
        assert math.exp(L.privatised_count_loglikelihood(s, theta, 1.0)) == pytest.approx(
            brute, rel=1e-12
        )

    def test_exact_posterior_integrates_to_one(self):
        """The negative-binomial evidence against numerical integration (Simpson on [0, 80];
        the Gamma(3, 1) prior leaves < 1e-30 beyond, and the likelihood is bounded)."""
        grid = np.linspace(1e-12, 80.0, 16_001)
        for released in (-20.0, 0.0, 3.0, 25.0):
            density = L.privatised_count_posterior(released, grid, 1.0)
            assert integrate.simpson(density, x=grid) == pytest.approx(1.0, abs=1e-8)

    def test_ten_prior_predictive_posteriors_lie_in_prior_times_e_pm_1(self, example67_prior_draws):
        """Fig. 4: ten s_j from the model's prior predictive; each exact posterior density is
        within the prior density times e^{±ε}, Δ = 1."""
        draws = example67_prior_draws
        released = draws["prior"]["released"].values.ravel()[:10]
        theta = np.linspace(1e-3, 20, 2001)
        prior = _prior_density(theta)
        lower, upper = L.posterior_density_bounds(prior, EX67["epsilon"], 1)
        for s in np.r_[released, -200.0, 200.0]:  # and two extreme releases
            post = L.privatised_count_posterior(s, theta, EX67["epsilon"])
            assert np.all(lower <= post * (1 + 1e-10)) and np.all(post <= upper * (1 + 1e-10))
        # "far from the bounds": the largest posterior/prior ratio stays well inside e
        ratios = [np.max(L.privatised_count_posterior(s, theta, 1.0) / prior) for s in released]
        assert max(ratios) < math.e

    def test_extreme_releases_approach_the_bound(self):
        # s → −∞: p(s | θ) ∝ E[e^{clamp(X)/b}], whose range over θ is e^{6/b} = e^ε:
        # posterior/prior ratios spread over a factor approaching e^ε.
        theta = np.linspace(1e-3, 60, 6001)
        post = L.privatised_count_posterior(-200.0, theta, 1.0)
        ratio = post / _prior_density(theta)
        assert ratio.max() / ratio.min() == pytest.approx(math.e, rel=1e-3)
        assert ratio.max() / ratio.min() <= math.e

    def test_abc_rejection_sampler_agrees_with_the_exact_posterior(self):
        """The paper's reference sampler ([51]; accept with prob. exp(−|s − clamp(x)|/b))
        against the exact posterior: one-sample KS at the 0.1% level, seeded."""
        rng = np.random.default_rng(100)
        s, b = 3.0, 6.0
        theta = rng.gamma(3.0, 1.0, size=40_000)
        clamped = np.clip(rng.poisson(theta), 0, 6)
        accepted = theta[rng.uniform(size=theta.size) < np.exp(-np.abs(s - clamped) / b)]
        grid = np.linspace(1e-6, 40, 40_001)
        density = L.privatised_count_posterior(s, grid, 1.0)
        cdf = integrate.cumulative_trapezoid(density, grid, initial=0.0)
        statistic = stats.kstest(accepted, lambda x: np.interp(x, grid, cdf)).statistic
        assert statistic < 1.95 / math.sqrt(accepted.size)  # 0.1% critical value

    def test_from_datatree_with_a_real_release(self, example67_prior_draws):
        """Prior draws of the model + a Laplace release through the ledger: bounds on events,
        and the exact posterior probabilities lie inside them."""
        ledger = PrivacyLedger()
        clamped_count = np.array([4.0])  # the record (never read by the bounds)
        released = release_laplace(
            clamped_count,
            sensitivity=6,
            epsilon=1.0,
            ledger=ledger,
            neighbouring="replace-one",
            variables=("theta",),
            statistic="clamped count",
        )[0]
        draws = example67_prior_draws.copy()
        events = {"theta > 5": ("theta", 5.0, None), "theta < 1": lambda d: d["theta"] < 1.0}
        result = L.from_datatree(draws, events, distance=1, epsilon=ledger)
        assert result.attrs["epsilon"] == 1.0 and result.attrs["radius"] == 1.0
        exact_prior = np.array([stats.gamma.sf(5, 3), stats.gamma.cdf(1, 3)])
        assert np.all(
            np.abs(result.prior_probability - exact_prior) < 4 * result.prior_probability_mcse
        )
        expected = L.posterior_bounds(result.prior_probability.values, 1.0, 1)
        np.testing.assert_allclose(result.lower, expected.lower)
        np.testing.assert_allclose(result.upper, expected.upper)
        assert np.all(result.lower_sharp >= result.lower) and np.all(
            result.upper_sharp <= result.upper
        )
        grid = np.linspace(1e-12, 80.0, 16_001)
        density = L.privatised_count_posterior(released, grid, 1.0)
        post_above = integrate.simpson(np.where(grid >= 5, density, 0.0), x=grid)
        post_below = integrate.simpson(np.where(grid <= 1, density, 0.0), x=grid)
        exact = L.posterior_bounds(exact_prior, 1.0, 1, sharp=True)
        assert np.all(exact.lower <= [post_above, post_below])
        assert np.all([post_above, post_below] <= exact.upper)
        # the ledger carried by the DataTree itself
        ledger.attach(draws)
        assert float(L.from_datatree(draws, events, distance=1).upper[0]) == float(result.upper[0])


class TestFromDatatreeErrors:
    def _draws(self):
        rng = np.random.default_rng(0)
        data = xr.Dataset(
            {
                "mu": (("chain", "draw"), rng.normal(size=(1, 200))),
                "w": (("chain", "draw", "k"), rng.uniform(size=(1, 200, 3))),
            }
        )
        return xr.DataTree.from_dict({"prior": data})

    def test_errors(self):
        draws = self._draws()
        with pytest.raises(ValueError, match="no privacy ledger"):
            L.from_datatree(draws, {"a": ("mu", 0, None)}, distance=1)
        with pytest.raises(ValueError, match="no variable"):
            L.from_datatree(draws, {"a": ("sigma", 0, None)}, distance=1, epsilon=1.0)
        with pytest.raises(ValueError, match="one yes/no per draw"):
            L.from_datatree(draws, {"a": ("w", 0.5, None)}, distance=1, epsilon=1.0)
        with pytest.raises(ValueError, match="booleans"):
            L.from_datatree(draws, {"a": lambda d: d["mu"]}, distance=1, epsilon=1.0)
        with pytest.raises(ValueError, match="events is empty"):
            L.from_datatree(draws, {}, distance=1, epsilon=1.0)
        with pytest.raises(ValueError, match="no 'posterior' group"):
            L.from_datatree(
                draws, {"a": ("mu", 0, None)}, distance=1, epsilon=1.0, group="posterior"
            )
        for group in ("observed_data", "constant_data"):
            with pytest.raises(ValueError, match=rf"group '{group}' holds the records"):
                L.from_datatree(draws, {"a": ("mu", 0, None)}, distance=1, epsilon=1.0, group=group)
        records = xr.Dataset({"y": ("y_dim_0", np.array([0.9, 0.8]))})
        with pytest.raises(ValueError, match=r"no \['chain', 'draw'\] dimension"):
            L.from_datatree(records, {"a": ("y", 0.85, None)}, distance=1, epsilon=1.0)
        delta_ledger = PrivacyLedger(events=[_event(1.0, 1e-5)])
        with pytest.raises(ValueError, match="pure epsilon-DP"):
            L.from_datatree(draws, {"a": ("mu", 0, None)}, distance=1, epsilon=delta_ledger)

    def test_reduced_vector_event_and_infinite_distance(self):
        draws = self._draws()
        result = L.from_datatree(
            draws,
            {"any w > 0.9": lambda d: (d["w"] > 0.9).any("k"), "mu >= 0": ("mu", 0.0, None)},
            distance=math.inf,
            epsilon=0.5,
        )
        assert list(result.event.values) == ["any w > 0.9", "mu >= 0"]
        assert np.all(result.lower == 0) and np.all(result.upper == 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            L.from_datatree(
                draws["prior"].to_dataset(), {"m": ("mu", None, 0.0)}, distance=2, epsilon=0.1
            )


def test_public_api_is_exported_and_documented():
    for name in L.__all__:
        obj = getattr(L, name)
        if callable(obj) and not isinstance(obj, type):
            doc = obj.__doc__ or ""
            assert "Bailie & Gong (2023/2024)" in doc, name
            assert "Returns" in doc and "Raises" in doc, name
