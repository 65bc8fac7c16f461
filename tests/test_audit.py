"""Empirical privacy audits of the Laplace release paths, with a broken negative control."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pymc_dp import PrivacyLedger
from pymc_dp.audit import audit_mechanism, clopper_pearson, epsilon_lower_bound
from pymc_dp.conjugacy import ConjugateLink
from pymc_dp.families import BetaBernoulli, RecordDomain
from pymc_dp.release import release_sufficient_statistics

EPSILON = 1.0


def test_clopper_pearson_matches_scipy():
    for k, n in ((0, 50), (7, 50), (50, 50)):
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert clopper_pearson(k, n, 0.05) == pytest.approx((ci.low, ci.high))
    assert clopper_pearson(0, 100, 0.05)[1] == pytest.approx(1 - 0.025 ** (1 / 100))


def _link(y, groups=None, n_groups=1):
    return ConjugateLink(
        "y", "p", BetaBernoulli(), np.asarray(y), groups, n_groups, RecordDomain(n_categories=2)
    )


def _released(link, backend="numpy", sensitivity_factor=1.0):
    def mechanism(_, rng):
        eps = EPSILON * sensitivity_factor  # a factor > 1 under-noises: a broken mechanism
        kwargs = {"rng": rng} if backend == "numpy" else {}
        out = release_sufficient_statistics(
            link, eps, ledger=PrivacyLedger(), backend=backend, **kwargs
        )
        return out.noisy

    return mechanism


# Worst-case neighbouring pairs. One group, replace-one: n₊ changes by 1 (sensitivity 1).
ONE_GROUP = (_link([1, 0, 0, 0]), _link([0, 0, 0, 0]))
# Grouped table, replace-one: (group 0, success) → (group 1, failure) moves 2 in L1.
GROUPED = (
    _link([1, 0, 1], groups=np.array([0, 1, 1]), n_groups=2),
    _link([0, 0, 1], groups=np.array([1, 1, 1]), n_groups=2),
)


def _audit(pair, event, n_runs, backend="numpy", factor=1.0):
    d0, d1 = pair
    mech0, mech1 = _released(d0, backend, factor), _released(d1, backend, factor)
    return audit_mechanism(
        lambda d, rng: (mech0 if d == 0 else mech1)(d, rng),
        0,
        1,
        event,
        n_runs,
        np.random.default_rng(2024),
    )


def _one_group_event(noisy):
    return noisy[0, 0] > 0.5  # midpoint of the two true counts 1 and 0: tight for Laplace


def _grouped_event(noisy):
    # Both changed coordinates move towards D0: group 0 successes high, group 1 failures low.
    return noisy[0, 0] > 0.5 and noisy[1, 1] < 1.5


def test_audit_of_one_group_release_stays_below_epsilon_and_is_tight():
    result = _audit(ONE_GROUP, _one_group_event, 6000)
    assert 0.5 * EPSILON < result.epsilon_lower_bound <= EPSILON


def test_audit_of_grouped_table_release_stays_below_epsilon():
    result = _audit(GROUPED, _grouped_event, 6000)
    assert 0.3 * EPSILON < result.epsilon_lower_bound <= EPSILON


def test_audit_through_opendp_stays_below_epsilon():
    result = _audit(ONE_GROUP, _one_group_event, 1500, backend="opendp")
    assert result.epsilon_lower_bound <= EPSILON
    assert result.frequency_0 > result.frequency_1


def test_negative_control_broken_mechanism_is_caught():
    """Noise calibrated for ε = 3 while claiming ε = 1: the audit must exceed the claim."""
    result = _audit(ONE_GROUP, _one_group_event, 6000, factor=3.0)
    assert result.epsilon_lower_bound > EPSILON


def test_lower_bound_is_zero_for_identical_frequencies():
    assert epsilon_lower_bound(500, 500, 1000) == 0.0
