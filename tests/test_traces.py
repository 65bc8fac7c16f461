"""pymc_dp.traces: which groups of ``pm.sample``'s DataTree a private trace may keep, the last
draw of a chain, and the options refused while only the last draw is released."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from pymc_dp.traces import SAFE_GROUPS, keep_groups, last_draw, refuse_leaky_options

# every group PyMC's pm.sample (with log_likelihood and prior predictive) can return
PYMC_GROUPS = (
    "posterior",
    "sample_stats",
    "warmup_posterior",
    "warmup_sample_stats",
    "observed_data",
    "constant_data",
    "log_likelihood",
    "prior",
    "prior_predictive",
    "posterior_predictive",
)
READ_RAW_DATA = ("observed_data", "constant_data", "log_likelihood")


def _tree() -> xr.DataTree:
    draws = xr.Dataset({"x": (("chain", "draw"), np.arange(6.0).reshape(2, 3))})
    return xr.DataTree.from_dict({name: draws for name in PYMC_GROUPS})


def test_safe_groups_are_the_draws_and_sampler_statistics_only():
    assert SAFE_GROUPS == ("posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats")
    assert not set(READ_RAW_DATA) & set(SAFE_GROUPS)


def test_keep_groups_drops_every_group_that_reads_raw_data():
    tree = _tree()
    assert keep_groups(tree) is tree  # in place
    assert set(tree.children) == set(SAFE_GROUPS)
    for name in READ_RAW_DATA:
        assert name not in tree.children


def test_keep_groups_keeps_only_the_groups_asked_for():
    tree = keep_groups(_tree(), ("posterior",))
    assert list(tree.children) == ["posterior"]
    np.testing.assert_array_equal(tree["posterior"]["x"].values, np.arange(6.0).reshape(2, 3))


def test_last_draw_keeps_the_last_draw_of_each_chain_and_no_timing():
    tree = _tree()
    tree["posterior"].attrs["sampling_time"] = 1.5
    tree["posterior"].attrs["inference_library"] = "pymc"
    last = last_draw(tree)
    assert list(last.children) == ["posterior"]
    np.testing.assert_array_equal(last["posterior"]["x"].values, [[2.0], [5.0]])
    assert "sampling_time" not in last["posterior"].attrs
    assert last["posterior"].attrs["inference_library"] == "pymc"


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ({"progressbar": True}, r"^only the last draw is released: the progress bar would show"),
        ({"discard_tuned_samples": False}, r"^only the last draw is released: tuning draws"),
        ({"compute_convergence_checks": True}, r"^only the last draw is released: convergence"),
        ({"callback": print}, r"^only the last draw is released: 'callback' would see every"),
        ({"trace": object()}, r"^only the last draw is released: 'trace' would see every"),
    ],
)
def test_refuse_leaky_options_refuses_what_sees_unreleased_draws(option, match):
    with pytest.raises(ValueError, match=match):
        refuse_leaky_options(dict(option))


def test_refuse_leaky_options_turns_off_the_progress_bar_and_convergence_checks():
    kwargs = {"chains": 2, "progressbar": False, "discard_tuned_samples": True}
    refuse_leaky_options(kwargs)
    assert kwargs == {
        "chains": 2,
        "progressbar": False,
        "discard_tuned_samples": True,
        "compute_convergence_checks": False,
    }
    empty: dict = {}
    refuse_leaky_options(empty)
    assert empty == {"progressbar": False, "compute_convergence_checks": False}
