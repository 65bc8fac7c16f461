"""The publish gate: a trace's certificate, pymc_dp.to_netcdf and the ledger's warning.

Issue 24, item 4: ``pm.sample_posterior_predictive(idata, extend_inferencedata=True)`` on the
user's own model wrote the raw records into a private trace's ``observed_data``, silently, and
the trace still looked publishable.
"""

from __future__ import annotations

import json
import warnings

import h5py
import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import PrivacyLedger, UncertifiedTraceError, UncertifiedTraceWarning
from pymc_dp.certificate import CERTIFICATE_ATTR, certify, still_certified, uncertified
from pymc_dp.hmm.relabel import relabel_states

RNG = np.random.default_rng(0)
GROUP = RNG.integers(0, 3, 300)
OUTCOME = RNG.binomial(1, np.array([0.1, 0.3, 0.6])[GROUP])


def _model() -> pm.Model:
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        rate = pm.Beta("rate", 1, 1, dims="group")
        pm.Bernoulli("y", p=rate[GROUP], observed=OUTCOME)
    return model


@pytest.fixture(scope="module")
def released() -> tuple[pm.Model, xr.DataTree]:
    model = _model()
    with model:
        idata = pymc_dp.sample(30, tune=30, chains=2, epsilon=1.0, progressbar=False, random_seed=1)
    return model, idata


@pytest.fixture
def trace(released) -> xr.DataTree:
    return released[1].copy()


def _ledger_quietly(idata):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertifiedTraceWarning)
        return PrivacyLedger.from_datatree(idata)


def test_a_private_trace_is_certified_and_round_trips(trace, tmp_path):
    assert uncertified(trace) == []
    path = pymc_dp.to_netcdf(trace, tmp_path / "trace.nc")
    assert path == tmp_path / "trace.nc" and path.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["trace.nc"]  # no temporary left
    with xr.open_datatree(path, engine="h5netcdf") as loaded:
        assert uncertified(loaded) == []
        ledger = _ledger_quietly(loaded)  # no warning after a round trip
        np.testing.assert_array_equal(loaded["posterior"]["rate"], trace["posterior"]["rate"])
    assert ledger.epsilon == 1.0


def test_pm_posterior_predictive_on_the_raw_model_is_refused(released, trace, tmp_path):
    model, _ = released
    with model:
        pm.sample_posterior_predictive(trace, extend_inferencedata=True, progressbar=False)
    assert "observed_data" in trace.children  # what PyMC does: the raw records
    path = tmp_path / "trace.nc"
    with pytest.raises(UncertifiedTraceError, match=r"group 'observed_data' \(added") as caught:
        pymc_dp.to_netcdf(trace, path)
    message = str(caught.value)
    assert "group 'posterior_predictive' (added" in message
    assert "del idata['observed_data']" in message and message.endswith("Nothing was written.")
    assert list(tmp_path.iterdir()) == []
    with pytest.warns(UncertifiedTraceWarning, match="no longer covers this trace"):
        ledger = PrivacyLedger.from_datatree(trace)
    assert ledger.epsilon == 1.0  # still read
    del trace["observed_data"]
    del trace["posterior_predictive"]
    assert pymc_dp.to_netcdf(trace, path).exists()  # what is left was released


def test_pymc_dp_posterior_predictive_stays_publishable(released, trace, tmp_path):
    model, _ = released
    with model:
        pymc_dp.sample_posterior_predictive(trace, records_per_group=4, random_seed=2)
    assert still_certified(trace)
    with xr.open_datatree(pymc_dp.to_netcdf(trace, tmp_path / "t.nc")) as loaded:
        assert loaded["posterior_predictive"]["y"].shape == (2, 30, 3, 4)


def test_a_predictive_added_to_an_uncertified_trace_does_not_certify_it(released, trace):
    model, _ = released
    trace["constant_data"] = xr.Dataset({"g": ("g_dim_0", GROUP)})
    with model:
        pymc_dp.sample_posterior_predictive(trace, records_per_group=2, random_seed=2)
    assert uncertified(trace) == [
        "group 'constant_data' (added after the trace was certified)",
        "group 'posterior_predictive' (added after the trace was certified)",
    ]


def test_log_likelihood_of_the_raw_records_is_refused(released, trace, tmp_path):
    model, _ = released
    with model:
        pm.compute_log_likelihood(trace, progressbar=False)
    assert "log_likelihood" in trace.children
    with pytest.raises(UncertifiedTraceError, match="per-record log-likelihoods"):
        pymc_dp.to_netcdf(trace, tmp_path / "t.nc")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("edit", ["value", "added variable", "coordinate", "attribute", "root"])
def test_edits_after_sampling_are_named(trace, tmp_path, edit):
    posterior = trace["posterior"]
    if edit == "value":
        values = posterior["rate"].values.copy()
        values[0, 0, 0] = 0.5
        posterior["rate"] = posterior["rate"].copy(data=values)
        expected = "group 'posterior' (variable 'rate' changed)"
    elif edit == "added variable":
        posterior["odds"] = posterior["rate"] / (1 - posterior["rate"])
        expected = "group 'posterior' (variable 'odds' added)"
    elif edit == "coordinate":
        trace["posterior"] = posterior.to_dataset().assign_coords(group=["x", "y", "z"])
        expected = "variable 'group' changed"
    elif edit == "attribute":
        trace["sample_stats"].attrs["note"] = "n = 300"
        expected = "group 'sample_stats' (attributes changed)"
    else:
        trace.attrs["records"] = "0,1,1"
        expected = "the root (attributes changed)"
    problems = uncertified(trace)
    assert len(problems) == 1 and expected in problems[0]
    with pytest.raises(
        UncertifiedTraceError, match=expected.replace("(", r"\(").replace(")", r"\)")
    ):
        pymc_dp.to_netcdf(trace, tmp_path / "t.nc")


def test_an_edited_ledger_is_not_covered(trace):
    ledger = PrivacyLedger.from_datatree(trace)
    trace.attrs["pymc_dp_ledger"] = ledger.to_json().replace('"epsilon": 1.0', '"epsilon": 0.1')
    assert uncertified(trace) == ["the root (attributes changed)"]


def test_deleting_certified_content_keeps_it_publishable(trace, tmp_path):
    del trace["sample_stats"]
    del trace["posterior"]["rate"]
    assert uncertified(trace) == []
    assert pymc_dp.to_netcdf(trace, tmp_path / "t.nc").exists()


def test_traces_without_a_ledger_or_a_certificate_are_refused(released, trace, tmp_path):
    model, _ = released
    with model:
        raw = pm.sample(10, tune=10, chains=1, progressbar=False, random_seed=1)
    with pytest.raises(UncertifiedTraceError, match="carries no privacy ledger"):
        pymc_dp.to_netcdf(raw, tmp_path / "raw.nc")
    with pytest.raises(UncertifiedTraceError, match=r"not the xarray\.DataTree"):
        pymc_dp.to_netcdf(trace["posterior"].to_dataset(), tmp_path / "raw.nc")
    del trace.attrs[CERTIFICATE_ATTR]
    with pytest.raises(UncertifiedTraceError, match="carries no certificate"):
        pymc_dp.to_netcdf(trace, tmp_path / "raw.nc")
    with pytest.warns(UncertifiedTraceWarning, match="no certificate"):
        PrivacyLedger.from_datatree(trace)
    trace.attrs[CERTIFICATE_ATTR] = "{not json"
    assert uncertified(trace) == ["the whole trace (its certificate is unreadable)"]
    assert list(tmp_path.iterdir()) == []


def test_a_refused_write_leaves_an_existing_file_alone(released, trace, tmp_path):
    path = tmp_path / "t.nc"
    path.write_bytes(b"earlier")
    trace["observed_data"] = xr.Dataset({"y": ("y_dim_0", OUTCOME)})
    with pytest.raises(UncertifiedTraceError):
        pymc_dp.to_netcdf(trace, path)
    assert path.read_bytes() == b"earlier"


def test_a_failed_write_leaves_no_partial_file(trace, tmp_path):
    path = tmp_path / "t.nc"
    path.write_bytes(b"earlier")
    with pytest.raises(ValueError):
        pymc_dp.to_netcdf(trace, path, engine="no-such-engine")
    assert path.read_bytes() == b"earlier" and [p.name for p in tmp_path.iterdir()] == ["t.nc"]


def _hmm_like_trace() -> xr.DataTree:
    rng = np.random.default_rng(3)
    chains, draws, states = 2, 5, 2
    posterior = xr.Dataset(
        {
            "states": (("chain", "draw", "region", "time"), rng.integers(0, 2, (2, 5, 3, 4))),
            "transition": (
                ("chain", "draw", "from_state", "state"),
                rng.dirichlet(np.ones(states), (chains, draws, states + 1)),
            ),
            "emission_f0": (
                ("chain", "draw", "state", "f0"),
                rng.dirichlet(np.ones(3), (chains, draws, states)),
            ),
        },
        coords={"state": [0, 1], "from_state": [-1, 0, 1]},
    )
    return xr.DataTree.from_dict({"posterior": posterior})


def test_relabelling_keeps_a_certified_trace_certified():
    trace = certify(PrivacyLedger().attach(_hmm_like_trace()))
    assert still_certified(relabel_states(trace))
    trace.attrs["note"] = "edited"
    assert not still_certified(relabel_states(trace))  # it was not covered before


_DTYPES = st.sampled_from(["float64", "float32", "int64", "int32", "int8", "bool", "str"])


def _array(dtype: str, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "str":
        return np.array([f"level {i}" for i in rng.integers(0, 9, size)], dtype=object)
    if dtype == "bool":
        return rng.integers(0, 2, size).astype(bool)
    return (rng.normal(size=size) * 10).astype(dtype)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    dtype=_DTYPES,
    coord_dtype=st.sampled_from(["int64", "str"]),
    size=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    attr=st.one_of(
        st.integers(-5, 5), st.text(max_size=8), st.lists(st.integers(0, 3), min_size=1, max_size=3)
    ),
)
def test_the_certificate_survives_netcdf_and_sees_any_one_change(
    tmp_path, dtype, coord_dtype, size, seed, attr
):
    """Every dtype, coordinate kind and attribute type round-trips through netCDF with its
    certificate intact, and changing any one element of the variable is seen."""
    values = _array(dtype, size, seed)
    coords = {"k": _array(coord_dtype, size, seed + 1) if coord_dtype == "str" else np.arange(size)}
    dataset = xr.Dataset({"v": ("k", values, {"unit": attr})}, coords=coords, attrs={"a": attr})
    trace = certify(xr.DataTree.from_dict({"posterior": dataset}))
    trace.attrs["pymc_dp_ledger"] = PrivacyLedger().to_json()
    certify(trace)
    path = tmp_path / f"{dtype}_{coord_dtype}_{size}_{seed}.nc"
    pymc_dp.to_netcdf(trace, path)
    with xr.open_datatree(path, engine="h5netcdf") as loaded:
        assert uncertified(loaded) == []
    changed = values.copy()
    changed[seed % size] = (
        "other"
        if dtype == "str"
        else (not changed[seed % size] if dtype == "bool" else changed[seed % size] + 1)
    )
    trace["posterior"]["v"] = ("k", changed, {"unit": attr})
    assert uncertified(trace) == ["group 'posterior' (variable 'v' changed)"]


# --- the adversarial review of the gate -----------------------------------------------------


def test_attaching_a_ledger_again_does_not_certify_raw_records(released, trace, tmp_path):
    """Review F1: re-attaching the trace's own ledger after pm.sample_posterior_predictive
    certified observed_data and constant_data, and to_netcdf wrote every record."""
    model, _ = released
    with model:
        pm.sample_posterior_predictive(trace, extend_inferencedata=True, progressbar=False)
    with pytest.warns(UncertifiedTraceWarning):
        PrivacyLedger.from_datatree(trace).attach(trace)
    with pytest.raises(UncertifiedTraceError, match="observed_data"):
        pymc_dp.to_netcdf(trace, tmp_path / "t.nc")
    assert list(tmp_path.iterdir()) == []


def test_a_trace_assembled_by_hand_is_not_certified(released, tmp_path):
    """Review F2: pymc_dp.private_trace certified a posterior pm.sample drew from the raw
    model (with a Deterministic per record that showed every label)."""
    model = _model()
    ledger = PrivacyLedger()
    link = pymc_dp.analyse_model(model)["y"]
    release = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=ledger)
    with model:
        raw = pm.sample(
            10,
            tune=10,
            chains=1,
            progressbar=False,
            random_seed=1,
            compute_convergence_checks=False,
        )
    trace = pymc_dp.private_trace(raw, [release], model=model, ledger=ledger)
    with pytest.raises(UncertifiedTraceError, match="carries no certificate"):
        pymc_dp.to_netcdf(trace, tmp_path / "t.nc")
    assert list(tmp_path.iterdir()) == []


def test_the_file_holds_a_certificate_of_what_it_holds_and_no_encoding(trace, tmp_path):
    """Review F3/F4: the written certificate kept digests of deleted groups (brute-forceable
    records); encodings (`coordinates`, `_FillValue`) and extra certificate keys carried
    arbitrary text into the file."""
    model = _model()
    with model:
        pm.sample_posterior_predictive(trace, extend_inferencedata=True, progressbar=False)
    for group in ("observed_data", "constant_data", "posterior_predictive"):
        if group in trace.children:
            del trace[group]
    trace["posterior"]["rate"].encoding["coordinates"] = "group " + " ".join(map(str, OUTCOME))
    trace["posterior"]["rate"].encoding["_FillValue"] = float(OUTCOME.mean())
    certificate = json.loads(trace.attrs[CERTIFICATE_ATTR])
    trace.attrs[CERTIFICATE_ATTR] = json.dumps({**certificate, "notes": OUTCOME.tolist()})
    path = pymc_dp.to_netcdf(trace, tmp_path / "t.nc")
    with h5py.File(path) as handle:
        attributes = dict(handle["posterior/rate"].attrs)
        written = json.loads(handle.attrs[CERTIFICATE_ATTR])
    assert "coordinates" not in attributes or "0 1" not in str(attributes["coordinates"])
    assert "_FillValue" not in attributes or float(attributes["_FillValue"][0]) != OUTCOME.mean()
    assert set(written) == {"contents", "version"}
    assert not any(
        item.startswith(("/observed_data", "/constant_data")) for item in written["contents"]
    )
    with pytest.raises(ValueError, match=r"options \['encoding'\] are not accepted"):
        pymc_dp.to_netcdf(trace, tmp_path / "u.nc", encoding={})
    assert oct(path.stat().st_mode & 0o777) != oct(0o600)


def test_datetime_coordinates_survive_a_round_trip(tmp_path):
    """Review F6: datetime64[us] coordinates read back as [ns] and the clean trace was
    refused after loading."""
    with pm.Model(coords={"day": pd.date_range("2020-01-01", periods=3)}):
        g = pm.Data("g", GROUP)
        rate = pm.Beta("rate", 1, 1, dims="day")
        pm.Bernoulli("y", p=rate[g], observed=OUTCOME)
        trace = pymc_dp.sample(10, tune=10, chains=1, epsilon=1.0, progressbar=False)
    trace.attrs["mixed"] = [1, 2.5]
    certify(trace)
    path = pymc_dp.to_netcdf(trace, tmp_path / "t.nc")
    with xr.open_datatree(path, engine="h5netcdf") as loaded:
        assert uncertified(loaded) == []


def test_times_beyond_the_nanosecond_range_are_certified(tmp_path):
    """Second review: datetime64[s] coordinates outside 1678-2262 overflowed when hashed in
    nanoseconds, after the release: ε was charged and no trace came back."""
    days = np.array(["1500-01-01", "2024-02-01", "2300-03-01"], dtype="datetime64[s]")
    ledger = PrivacyLedger(budget=10.0)
    with pm.Model(coords={"day": days}):
        g = pm.Data("g", GROUP)
        rate = pm.Beta("rate", 1, 1, dims="day")
        pm.Bernoulli("y", p=rate[g], observed=OUTCOME)
        trace = pymc_dp.sample(10, tune=10, chains=1, epsilon=1.0, ledger=ledger, progressbar=False)
    assert still_certified(trace) and ledger.epsilon == 1.0
