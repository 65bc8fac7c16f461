"""pymc_dp.report: the privacy report of a trace (tables, figure, HTML) and its CLI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import PrivacyEvent, PrivacyLedger, UncertifiedTraceWarning
from pymc_dp.certificate import certify

RNG = np.random.default_rng(0)
GROUP = RNG.integers(0, 3, 400)
OUTCOME = RNG.binomial(1, np.array([0.1, 0.3, 0.6])[GROUP])


@pytest.fixture(scope="module")
def trace() -> xr.DataTree:
    with pm.Model(coords={"group": ["a", "b", "c"]}):
        g = pm.Data("g", GROUP)
        rate = pm.Beta("rate", 1, 1, dims="group")
        pm.Bernoulli("y", p=rate[g], observed=OUTCOME)
        return pymc_dp.sample(
            100, tune=50, chains=1, epsilon=0.5, budget=1.0, progressbar=False, random_seed=1
        )


def test_tables_say_what_was_spent_released_and_promised(trace):
    summary = pymc_dp.report(trace)
    statistics = summary.statistics
    assert list(statistics["released"]) == ["y"] and statistics["components"].item() == 6
    # Laplace scale b = Δ/ε = 2 / 0.5 = 4: sd √2 · 4
    assert statistics["noise_sd"].item() == pytest.approx(math.sqrt(2) * 4)
    assert statistics["labels"].item()[:2] == ["y[a, 0]", "y[a, 1]"]
    assert list(summary.widths["parameter"]) == ["rate[a]", "rate[b]", "rate[c]"]
    draws = trace["posterior"]["rate"].sel(group="b").values.ravel()
    expected = np.quantile(draws, 0.95) - np.quantile(draws, 0.05)
    assert summary.widths["width_private"].iloc[1] == pytest.approx(expected)
    # Bailie & Gong, odds form at Δ = 1: q e^ε / (q e^ε + 1 − q)
    upper = 0.1 * math.exp(0.5) / (0.1 * math.exp(0.5) + 0.9)
    assert summary.limits.set_index("prior").loc[0.1, "upper"] == pytest.approx(upper)


def test_a_plan_adds_the_expected_widths_at_the_nearest_epsilon(trace):
    plan = pd.DataFrame(
        {
            "parameter": ["rate[a]", "rate[b]", "rate[c]"] * 2,
            "epsilon": [0.1] * 3 + [0.6] * 3,
            "width_private": [0.3, 0.3, 0.3, 0.11, 0.12, 0.13],
            "width_nonprivate": [0.1] * 6,
        }
    )
    widths = pymc_dp.report(trace, plan=plan).widths
    assert list(widths["width_private_expected"]) == [0.11, 0.12, 0.13]
    assert widths.attrs["plan_epsilon"] == 0.6


def test_the_figure_and_html_are_written(trace, tmp_path):
    summary = pymc_dp.report(trace)
    path = summary.savefig(tmp_path / "report.png")
    assert path.stat().st_size > 20_000  # four panels drawn
    fig = summary.figure()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "Privacy spent per release (total ε = 0.5)"
    assert len(titles) == 4 and "infer about one record" in titles[3]
    html = summary._repr_html_()
    for heading in ("Privacy ledger", "Released statistics", "interval widths", "one record"):
        assert heading in html
    assert "<script" not in html


def test_delta_gives_no_limits_and_says_why():
    event = PrivacyEvent(
        mechanism="gaussian",
        epsilon=1.0,
        delta=1e-6,
        sensitivity=1.0,
        neighbouring="replace-one",
        variables=("y",),
        noise_backend="numpy",
        noise_scale=3.0,
    )
    posterior = xr.Dataset({"mu": (("chain", "draw"), RNG.normal(size=(1, 50)))})
    trace = PrivacyLedger(events=[event]).attach(xr.DataTree.from_dict({"posterior": posterior}))
    summary = pymc_dp.report(trace)
    assert summary.limits is None and "δ > 0" in summary.to_html()
    assert summary.statistics.empty


def test_uncovered_content_is_left_out_and_the_figure_says_so(trace):
    """Review F5: exact counts added to released_statistics appeared in the figure as if
    released, and a per-record variable's widths showed each record's label."""
    edited = trace.copy()
    edited["observed_data"] = xr.Dataset({"y": ("y_dim_0", OUTCOME)})
    edited["released_statistics"]["exact"] = xr.DataArray(
        [OUTCOME[GROUP == k].sum() for k in range(3)], dims="y_group"
    )
    rate = edited["posterior"]["rate"]
    edited["posterior"]["rate_of_record"] = rate.isel(group=xr.DataArray(GROUP[:5], dims="rec"))
    with pytest.warns(UncertifiedTraceWarning, match="observed_data"):
        summary = pymc_dp.report(edited)
    assert "observed_data" in summary.to_html()
    assert list(summary.statistics["released"]) == ["y"]
    assert not summary.widths["parameter"].str.startswith("rate_of_record").any()
    assert "UNCOVERED CONTENT left out" in summary.figure()._suptitle.get_text()


def test_a_trace_without_a_ledger_is_refused():
    trace = certify(xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": ("draw", [0.0])})}))
    with pytest.raises(KeyError, match="no privacy ledger"):
        pymc_dp.report(trace)
    with pytest.raises(ValueError, match="interval"):
        pymc_dp.report(trace, interval=1.5)


def test_the_cli_writes_the_report_of_a_saved_trace(trace, tmp_path, capsys):
    from pymc_dp.cli import main

    path = pymc_dp.to_netcdf(trace, tmp_path / "trace.nc")
    assert main(["report", str(path), "--html", str(tmp_path / "report.html")]) == 0
    printed = capsys.readouterr().out
    assert "Total: ε = 0.5, δ = 0" in printed and "laplace" in printed
    assert (tmp_path / "trace_report.png").stat().st_size > 20_000
    assert "Released statistics" in (tmp_path / "report.html").read_text()
    assert main(["report", str(tmp_path / "missing.nc")]) == 2
    xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": ("draw", [0.0])})}).to_netcdf(
        tmp_path / "raw.nc", engine="h5netcdf"
    )
    assert main(["report", str(tmp_path / "raw.nc")]) == 2
    assert "carries no privacy ledger" in capsys.readouterr().out


def test_a_variable_labelled_by_an_uncovered_coordinate_is_left_out(trace):
    """Second review: coordinate values swapped for record-derived labels reached the
    figure's tick labels and the widths table through a still-covered variable."""
    edited = trace.copy()
    edited["posterior"] = (
        edited["posterior"].to_dataset().assign_coords(group=[f"y={v}" for v in OUTCOME[:3]])
    )
    with pytest.warns(UncertifiedTraceWarning, match="'group' changed"):
        summary = pymc_dp.report(edited)
    assert summary.widths.empty
    assert not any("y=" in label for label in summary.statistics["labels"].item())
