"""The main job, run as a user would."""

from __future__ import annotations

import pytest
import xarray as xr
from matplotlib import image

from pymc_dp import PrivacyLedger
from pymc_dp.cli import main


def test_stops_job_prints_summary_and_writes_private_outputs(tmp_path, capsys):
    code = main(
        [
            "stops",
            "--epsilon",
            "1.0",
            "--draws",
            "200",
            "--tune",
            "50",
            "--output-dir",
            str(tmp_path),
            "--no-progressbar",
            "--seed",
            "3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "person_search_rate[Black]" in out and "non-private mean" in out
    assert "Total: ε = 1, δ = 0" in out
    trace = xr.open_datatree(tmp_path / "stops_trace.nc", engine="h5netcdf")
    ledger = PrivacyLedger.from_datatree(trace)
    assert [e.sensitivity for e in ledger.events] == [2.0, 1.0]
    assert "observed_data" not in trace.children and "constant_data" not in trace.children
    png = image.imread(tmp_path / "stops_forest.png")
    assert png.shape[0] > 300 and png.shape[1] > 300 and png.std() > 0.01


@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_stops_job_with_posterior_sampling(tmp_path, capsys, mechanism):
    args = ["stops", "--mechanism", mechanism, "--epsilon", "2", "--draws", "50", "--tune", "10"]
    code = main([*args, "--output-dir", str(tmp_path), "--no-progressbar"])
    out = capsys.readouterr().out
    assert code == 0 and "Total: ε = 2, δ = 0" in out
    trace = xr.open_datatree(tmp_path / f"stops_{mechanism}_trace.nc", engine="h5netcdf")
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert event.temperature > 1 and "released_statistics" not in trace.children
    if mechanism == "ops":
        assert "private draw(s)" in out and "No convergence is assumed" in out
        assert trace["posterior"].sizes["draw"] == 1 and not event.assumes_convergence
    else:
        assert "private 94% CI" in out and "tuning included" in out
        assert trace["posterior"].sizes["draw"] == 50
    png = image.imread(tmp_path / f"stops_{mechanism}_forest.png")
    assert png.shape[0] > 300 and png.std() > 0.01
    assert main(["stops", "--mechanism", mechanism, "--neighbouring", "add-remove-one"]) == 2


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "stops" in capsys.readouterr().out


def test_hmm_job_prints_profiles_and_writes_trace_and_figures(tmp_path, capsys):
    args = ["hmm", "--epsilon", "5", "--states", "2", "--draws", "20", "--tune", "20"]
    code = main([*args, "--output-dir", str(tmp_path), "--no-progressbar", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "5 precinct regions × 53 ISO weeks" in out and "(cells)" in out
    assert "Total: ε = 5, δ = 0" in out
    trace = xr.open_datatree(tmp_path / "hmm_precinct_laplace_trace.nc", engine="h5netcdf")
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert (event.mechanism, event.sensitivity) == ("laplace", 12.0)
    assert event.noise_scale == pytest.approx(2.4)  # OpenDP nudges the scale up, never down
    assert trace["released_statistics"]["cell_counts"].shape == (5, 53, 6, 9)
    assert trace["posterior"]["emission_race"].dims == ("chain", "draw", "state", "race")
    for figure in ("states", "emissions"):
        png = image.imread(tmp_path / f"hmm_precinct_laplace_{figure}.png")
        assert png.shape[0] > 200 and png.std() > 0.01


def test_hmm_job_with_ops_reports_the_convergence_caveat(tmp_path, capsys):
    args = ["hmm", "--mechanism", "ops", "--epsilon", "5", "--states", "2", "--draws", "5"]
    code = main([*args, "--tune", "5", "--output-dir", str(tmp_path), "--no-progressbar"])
    out = capsys.readouterr().out
    assert code == 0 and "assumes every chain converged" in out
    trace = xr.open_datatree(tmp_path / "hmm_precinct_ops_trace.nc", engine="h5netcdf")
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert event.assumes_convergence and event.worst_case_epsilon > 10 * event.epsilon
    assert trace["posterior"].sizes["draw"] == 1
