"""The main job, run as a user would."""

from __future__ import annotations

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


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "stops" in capsys.readouterr().out
