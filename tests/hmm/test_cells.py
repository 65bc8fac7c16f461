"""Record handling of the naive-Bayes HMM: raw counts are counts, errors name no private value.

Regression tests for an adversarial review: raw count tensors must be non-negative integers
with the same record total in every feature of a cell (the release's L1 sensitivity 2·D
assumes it), refusals give numbers of records and never a value or row, and
``with model: pymc_dp.sample(...)`` works for a model built by ``naive_bayes_hmm``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import InvalidPrivateDataError, PrivacyLedger
from pymc_dp.hmm import (
    CellCounts,
    cell_counts,
    cell_counts_from_frame,
    release_cell_counts,
    simulate_records,
    validate_counts,
)
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of

GRID = {"regions": ["a", "b"], "times": ["t0", "t1", "t2"], "features": ["x", "y"]}
CATEGORIES = [["p", "q"], ["u", "v", "w"]]
SECRET = 98765  # a distinctive out-of-domain code that must never reach a message


def _counts(tensor, *, noisy=False):
    return CellCounts(np.asarray(tensor, dtype=float), categories=CATEGORIES, noisy=noisy, **GRID)


def _consistent():
    """Two records in cell (a, t0), one in (b, t2): every feature sums to the cell total."""
    tensor = np.zeros((2, 3, 2, 3))
    tensor[0, 0, 0, :2] = [1, 1]  # x: p, q
    tensor[0, 0, 1, :3] = [0, 2, 0]  # y: v, v
    tensor[1, 2, 0, :2] = [0, 1]
    tensor[1, 2, 1, :3] = [0, 0, 1]
    return tensor


# --- raw counts are non-negative integers, consistent across features ----------------------


def test_consistent_integer_counts_are_accepted():
    counts = _counts(_consistent())
    np.testing.assert_array_equal(counts.cell_totals(), [[2, 0, 0], [0, 0, 1]])


def test_fractional_raw_counts_are_refused_even_when_totals_agree():
    tensor = _consistent()
    tensor[0, 0, 0, :2] = [1.5, 0.5]  # still sums to 2 records, as feature y does
    with pytest.raises(InvalidPrivateDataError, match="2 non-integer entries") as error:
        _counts(tensor)
    assert str(error.value).endswith("Nothing was released")
    assert "1.5" not in str(error.value) and "0.5" not in str(error.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_raw_counts_are_refused(bad):
    tensor = _consistent()
    tensor[1, 1, 1, 2] = bad
    with pytest.raises(InvalidPrivateDataError, match="1 NaN or infinite entries"):
        _counts(tensor)


def test_per_feature_totals_that_disagree_are_refused():
    tensor = _consistent()
    tensor[1, 2, 1, 0] += 1  # a "record" with a y but no x
    with pytest.raises(InvalidPrivateDataError, match="inconsistent across features") as error:
        _counts(tensor)
    message = str(error.value)
    assert "in 1 cell," in message and "feature 'y'" in message and "feature 'x'" in message
    assert message.endswith("Nothing was released")


def test_negative_raw_counts_are_refused_even_when_totals_agree():
    tensor = _consistent()
    tensor[0, 0, 0, :2] = [-1, 3]
    with pytest.raises(InvalidPrivateDataError, match="1 negative entries"):
        _counts(tensor)


def test_release_refuses_raw_counts_changed_after_construction():
    counts = _counts(_consistent())
    counts.counts[0, 0, 1, 1] = 1.25  # the array is mutable: the release checks it again
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match="non-integer"):
        release_cell_counts(counts, 1.0, ledger=ledger, backend="numpy")
    assert len(ledger) == 0


@pytest.mark.parametrize("projection", ["cell", "none"])
def test_released_counts_stay_fractional_and_inconsistent(projection):
    raw = _counts(_consistent())
    noisy = release_cell_counts(
        raw,
        0.5,
        ledger=PrivacyLedger(),
        backend="numpy",
        rng=np.random.default_rng(1),
        projection=projection,
    )
    assert noisy.noisy and np.any(noisy.counts != np.round(noisy.counts))
    totals = noisy.counts.sum(axis=3)
    assert np.any(totals[:, :, 0] != totals[:, :, 1])
    assert noisy.with_counts(noisy.counts * 0.5).noisy  # re-validated on the noisy path
    tensor = _consistent()
    tensor[0, 0, 0, 0] = -2.75
    tensor[1, 2, 1, 1] = 0.3
    assert _counts(tensor, noisy=True).noisy
    validate_counts(np.abs(tensor), [2, 3], raw=False)
    with pytest.raises(ValueError, match="raw counts cannot be negative"):
        validate_counts(tensor, [2, 3], allow_negative=True, raw=True)


# --- refusals give counts, never a private value or row ------------------------------------


def test_out_of_domain_codes_are_counted_never_echoed():
    n = 1000
    region, time = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    records = np.zeros((n, 2), dtype=np.int64)
    records[[777, 801, 923], 1] = SECRET  # three bad categories of feature y
    region[[612, 640]] = -SECRET  # two bad regions
    with pytest.raises(InvalidPrivateDataError, match=r"region: .* records have a code") as error:
        cell_counts(region, time, records, categories=CATEGORIES, **GRID)
    message = str(error.value)
    assert str(SECRET) not in message
    assert not any(str(row) in message for row in (612, 640, 777, 801, 923))
    assert "feature 'y': 3 records have a category outside the declared domain" in message
    assert "region: 2 records have a code outside the declared domain" in message
    assert "feature 'x'" not in message and "time" not in message.split(".")[0]
    assert message.endswith("nothing was counted or released")


def test_out_of_domain_time_code_is_counted_never_echoed():
    with pytest.raises(InvalidPrivateDataError, match="time: 1 record has a code") as error:
        cell_counts([0, 1], [0, SECRET], [[0, 0], [1, 2]], categories=CATEGORIES, **GRID)
    assert str(SECRET) not in str(error.value)


def test_frame_values_outside_the_domain_are_counted_never_echoed():
    frame = pd.DataFrame(
        {
            "where": ["a", "b", "b", "a"],
            "when": ["t0", "t2", "t2", "t1"],
            "x": ["p", "q", "q", "p"],
            "y": ["u", str(SECRET), str(SECRET), "v"],
        }
    )
    with pytest.raises(InvalidPrivateDataError, match="feature 'y' has 2 values") as error:
        cell_counts_from_frame(
            frame,
            region="where",
            time="when",
            features=["x", "y"],
            regions=GRID["regions"],
            times=GRID["times"],
            categories=dict(zip(GRID["features"], CATEGORIES, strict=True)),
        )
    assert str(SECRET) not in str(error.value)
    assert str(error.value).endswith("nothing was counted or released")


def test_count_tensor_refusals_name_no_value():
    tensor = _consistent()
    tensor[0, 1, 0, 0] = SECRET + 0.25
    tensor[0, 1, 1, 0] = SECRET + 0.25
    with pytest.raises(InvalidPrivateDataError, match="2 non-integer entries") as error:
        _counts(tensor)
    assert str(SECRET) not in str(error.value)
    tensor[0, 1, 1, 0] = SECRET  # now integer in y, fractional in x
    tensor[0, 1, 0, 0] = SECRET + 1
    with pytest.raises(InvalidPrivateDataError, match="inconsistent") as error:
        _counts(tensor)
    assert str(SECRET) not in str(error.value) and str(SECRET + 1) not in str(error.value)


# --- property: counted records are consistent; one-feature perturbations are refused ------


@st.composite
def record_sets(draw):
    n_regions, n_times = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    n = draw(st.integers(0, 15))
    region = draw(st.lists(st.integers(0, n_regions - 1), min_size=n, max_size=n))
    time = draw(st.lists(st.integers(0, n_times - 1), min_size=n, max_size=n))
    rows = [[draw(st.integers(0, k - 1)) for k in sizes] for _ in range(n)]
    counts = cell_counts(
        np.asarray(region, dtype=np.int64),
        np.asarray(time, dtype=np.int64),
        np.asarray(rows, dtype=np.int64).reshape(n, len(sizes)),
        regions=[f"r{r}" for r in range(n_regions)],
        times=[f"t{t}" for t in range(n_times)],
        features=[f"f{d}" for d in range(len(sizes))],
        categories=[[f"c{j}" for j in range(k)] for k in sizes],
    )
    return counts, n


@settings(max_examples=60, deadline=None)
@given(record_sets(), st.data())
def test_counted_records_are_consistent_and_perturbations_are_refused(counted, data):
    counts, n_records = counted
    totals = counts.counts.sum(axis=3)
    np.testing.assert_array_equal(totals, totals[:, :, :1].repeat(totals.shape[2], axis=2))
    assert counts.cell_totals().sum() == n_records
    assert counts.with_counts(counts.counts.copy()).counts.sum() == n_records * len(counts.features)
    n_regions, n_times, n_features, _ = counts.shape
    r = data.draw(st.integers(0, n_regions - 1))
    t = data.draw(st.integers(0, n_times - 1))
    d = data.draw(st.integers(0, n_features - 1))
    j = data.draw(st.integers(0, int(counts.n_categories[d]) - 1))
    fraction = data.draw(st.floats(0.01, 0.99))
    perturbed = counts.counts.copy()
    perturbed[r, t, d, j] += fraction
    with pytest.raises(InvalidPrivateDataError, match="non-integer"):
        counts.with_counts(perturbed)
    if n_features > 1:  # +1 in one feature only: a record with one feature but not the others
        perturbed = counts.counts.copy()
        perturbed[r, t, d, j] += 1
        with pytest.raises(InvalidPrivateDataError, match="inconsistent across features"):
            counts.with_counts(perturbed)
    both = counts.counts.copy()  # +1 in every feature: one more record, still consistent
    both[r, t, np.arange(n_features), 0] += 1
    assert counts.with_counts(both).cell_totals()[r, t] == counts.cell_totals()[r, t] + 1


# --- ``with model: pymc_dp.sample(...)`` --------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    return simulate_records(3, 6, 2, [2, 3], 300, np.random.default_rng(3))


def test_rebuild_is_top_level_inside_the_users_model_context(small):
    model = naive_bayes_hmm(small.counts, 2)
    with model:
        rebuilt = hmm_spec_of(model).rebuild(small.counts)
    assert rebuilt.parent is None and rebuilt is not model
    assert set(model.named_vars) == set(rebuilt.named_vars)


@pytest.mark.parametrize(
    ("mechanism", "truncation"), [("laplace", None), ("ops", 10), ("gibbs-exponential", 10)]
)
@pytest.mark.integration
def test_sample_inside_the_model_context(small, mechanism, truncation):
    model = naive_bayes_hmm(small.counts, 2, truncation=truncation)
    with model:
        idata = pymc_dp.sample(
            20,
            tune=20,
            epsilon=5.0,
            chains=1,
            mechanism=mechanism,
            progressbar=False,
            random_seed=4,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(5),
        )
    expected_draws = 1 if mechanism == "ops" else 20
    assert idata["posterior"].sizes["draw"] == expected_draws
    assert "transition" in idata["posterior"]
    ledger = PrivacyLedger.from_datatree(idata)
    # Laplace and OPS: one release; Gibbs: one event per kind of update
    assert len(ledger.events) == (3 if mechanism == "gibbs-exponential" else 1)
    assert ledger.epsilon == pytest.approx(5.0)
