"""The main job, run as a user would."""

from __future__ import annotations

import argparse
import functools
import re
from importlib import metadata

import arviz as az
import numpy as np
import pytest
import xarray as xr
from matplotlib import image

import pymc_dp
from pymc_dp import PrivacyLedger, cli
from pymc_dp.cli import main
from pymc_dp.datasets import load_mpls_stops
from pymc_dp.reference import NONPRIVATE_HEADING, exact_conjugate_posterior
from pymc_dp.stops import RATE, REASON, stops_model

DRAWS, TUNE, SEED = 200, 50, 3
FAST = ["--draws", str(DRAWS), "--tune", str(TUNE), "--no-progressbar", "--seed", str(SEED)]


@pytest.fixture
def no_raw_reference(monkeypatch):
    """Fail if the CLI computes the non-private posterior."""

    def refuse(*args, **kwargs):
        raise AssertionError("the default CLI must not compute the non-private posterior")

    monkeypatch.setattr(cli, "exact_conjugate_posterior", refuse)


@pytest.fixture
def seeded_noise(monkeypatch):
    """NumPy Laplace noise from a fixed seed, so that the printed private values are fixed."""
    sample = functools.partial(
        pymc_dp.sample, noise_backend="numpy", noise_rng=np.random.default_rng(11)
    )
    monkeypatch.setattr(pymc_dp, "sample", sample)


def _raw_strings() -> dict[str, list[str]]:
    """What the non-private comparison prints, computed here from the raw data: the
    non-private posterior means, as the CLI formats them (same draws and seed), and the raw
    per-race record and search counts (those of 100 or more: unambiguous tokens)."""
    stops = load_mpls_stops()
    reference = exact_conjugate_posterior(stops_model(stops), draws=DRAWS, chains=2, rng=SEED)
    summary = az.summary(reference, var_names=[RATE, REASON], ci_prob=0.94, ci_kind="eti")
    means = [
        f"{v:.4f}"
        for name, v in summary["mean"].astype(float).round(4).items()
        if "[Missing]" not in name  # no records: its raw posterior is the public prior
    ]
    recorded = stops[stops["personSearch"] != "Missing"]
    counts = recorded.groupby("race", observed=False)["personSearch"].agg(
        n="size", searched=lambda s: int((s == "YES").sum())
    )
    numbers = [int(v) for v in counts.to_numpy().ravel() if v >= 100]
    return {"means": means, "counts": [f"{v}" for v in numbers] + [f"{v:,}" for v in numbers]}


def _token(text: str) -> re.Pattern:
    """``text`` as a whole number: not part of a longer number."""
    return re.compile(rf"(?<![\d.,]){re.escape(text)}(?![\d]|[.,]\d)")


@pytest.mark.integration
def test_stops_job_prints_and_writes_only_private_outputs(
    tmp_path, capsys, no_raw_reference, seeded_noise
):
    code = main(["stops", "--epsilon", "0.05", *FAST, "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "person_search_rate[Black]" in out and "private mean" in out
    assert "released count" in out and "Privacy ledger:" in out
    assert "Total: ε = 0.05, δ = 0" in out
    assert "non-private" not in out.lower() and "NONPRIVATE" not in out
    raw = _raw_strings()
    for text in raw["means"] + raw["counts"]:
        assert not _token(text).search(out), f"raw-data value {text} printed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stops_forest.png", "stops_trace.nc"]
    trace = xr.open_datatree(tmp_path / "stops_trace.nc", engine="h5netcdf")
    ledger = PrivacyLedger.from_datatree(trace)
    assert [e.sensitivity for e in ledger.events] == [2.0, 1.0]
    assert "observed_data" not in trace.children and "constant_data" not in trace.children
    png = image.imread(tmp_path / "stops_forest.png")
    assert png.shape[0] > 300 and png.shape[1] > 300 and png.std() > 0.01


@pytest.mark.integration
def test_stops_job_nonprivate_comparison_is_opt_in_and_labelled(tmp_path, capsys, seeded_noise):
    args = ["stops", "--epsilon", "0.05", *FAST, "--nonprivate-comparison"]
    code = main([*args, "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert NONPRIVATE_HEADING == "NON-PRIVATE — data holder only, do not publish"
    assert out.count(NONPRIVATE_HEADING) == 1
    private, section = out.split(NONPRIVATE_HEADING)
    assert "non-private" not in private.lower()
    assert "non-private mean" in section and "End of the NON-PRIVATE section" in section
    for text in _raw_strings()["means"]:  # the values the default run must not print
        assert not _token(text).search(private) and _token(text).search(section)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "stops_forest.png",
        "stops_forest_NONPRIVATE_comparison.png",
        "stops_trace.nc",
    ]
    for name in ("stops_forest.png", "stops_forest_NONPRIVATE_comparison.png"):
        png = image.imread(tmp_path / name)
        assert png.shape[0] > 300 and png.std() > 0.01


def test_nonprivate_flag_is_documented(capsys):
    with pytest.raises(SystemExit, match=r"^0$") as exit_:
        main(["stops", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert exit_.value.code == 0 and "--nonprivate-comparison" in help_text
    assert (
        "for the data holder only: reads the raw data, not differentially private, never "
        "publish" in help_text
    )


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_stops_job_with_posterior_sampling(tmp_path, capsys, no_raw_reference, mechanism):
    args = ["stops", "--mechanism", mechanism, "--epsilon", "2", "--draws", "50", "--tune", "10"]
    code = main([*args, "--output-dir", str(tmp_path), "--no-progressbar"])
    out = capsys.readouterr().out
    assert code == 0 and "Total: ε = 2, δ = 0" in out
    assert "non-private" not in out.lower() and "released count" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"stops_{mechanism}_forest.png",
        f"stops_{mechanism}_trace.nc",
    ]
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


@pytest.mark.integration
def test_stops_job_with_gaussian_noise(tmp_path, capsys, no_raw_reference):
    args = ["stops", "--noise", "gaussian", "--delta", "1e-6", "--epsilon", "1", *FAST]
    assert main([*args, "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Mechanism: gaussian. Total ε = 1, δ = 1e-06." in out and "Gaussian noise is the" in out
    assert "Total: ε = 1, δ = 1e-06" in out
    trace = xr.open_datatree(tmp_path / "stops_trace.nc", engine="h5netcdf")
    events = PrivacyLedger.from_datatree(trace).events
    assert [e.mechanism for e in events] == ["gaussian", "gaussian"]
    assert [e.delta for e in events] == [5e-7, 5e-7]
    # L2 sensitivities (table_l2_sensitivity): √2 for the race × search table (replace-one,
    # full table), 1 for the reasons' release (one released component; Laplace: 2 and 1)
    np.testing.assert_allclose([e.sensitivity for e in events], [2**0.5, 1.0])


@pytest.mark.parametrize(
    "extra",
    [
        ["--noise", "gaussian"],  # no δ
        ["--noise", "gaussian", "--delta", "1e-6", "--mechanism", "ops"],
        ["--delta", "1e-6"],  # a δ for Laplace
    ],
)
def test_stops_job_refuses_inconsistent_noise_options(capsys, extra):
    assert main(["stops", *extra, "--no-progressbar"]) == 2
    assert "error: --" in capsys.readouterr().out


@pytest.mark.integration
def test_ops_nonprivate_comparison_file_is_separate(tmp_path, capsys):
    args = ["stops", "--mechanism", "ops", "--nonprivate-comparison", "--no-progressbar"]
    assert main([*args, "--output-dir", str(tmp_path)]) == 0
    assert NONPRIVATE_HEADING in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "stops_ops_forest.png",
        "stops_ops_forest_NONPRIVATE_comparison.png",
        "stops_ops_trace.nc",
    ]


def test_record_count_is_shown_only_when_public(tmp_path, capsys, no_raw_reference):
    args = ["stops", "--neighbouring", "add-remove-one", "--draws", "20", "--tune", "10"]
    assert main([*args, "--output-dir", str(tmp_path), "--no-progressbar"]) == 0
    out = capsys.readouterr().out
    assert "51,920" not in out and "51920" not in out
    assert "number of records is private under add-remove-one" in out


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit, match=r"^0$"):
        main(["--version"])
    installed = metadata.version("pymc_dp")
    assert pymc_dp.__version__ == installed
    assert capsys.readouterr().out == f"pymc-dp {installed}\n"


def _parsers(parser: argparse.ArgumentParser):
    """The parser and every subcommand's parser."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_has_help_text_and_shows_its_default():
    checked = 0
    for parser in _parsers(cli._parser()):
        formatter = parser._get_formatter()
        rendered = "".join(parser.format_help().split())  # argparse wraps at any hyphen
        for action in parser._actions:
            if not action.option_strings or isinstance(
                action, argparse._HelpAction | argparse._VersionAction
            ):
                continue
            option = f"{parser.prog} {action.option_strings[0]}"
            assert action.help and len(action.help) > 10, option
            template = formatter._get_help_string(action)
            shown = template % {**vars(action), "prog": parser.prog}
            assert "(default" in shown, option
            if "%(default)s" in template:
                assert shown.endswith(f"(default: {action.default})"), option
            assert "".join(shown.split()) in rendered, option
            checked += 1
    assert checked == 32  # stops: 11 + 5 common; hmm: 9 + 5 common; report: 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stops", "--epsilon", "-1"], "argument --epsilon: must be a finite number > 0, got -1"),
        (["stops", "--epsilon", "nan"], "argument --epsilon: must be a finite number > 0"),
        (["stops", "--delta", "1"], "argument --delta: must be a number with 0 < δ < 1, got 1"),
        (["stops", "--chains", "0"], "argument --chains: must be an integer >= 1, got 0"),
        (["hmm", "--tune", "-5"], "argument --tune: must be an integer >= 0, got -5"),
        (["hmm", "--draws", "x"], "argument --draws: invalid integer value: 'x'"),
        (["hmm", "--epsilon", "x"], "argument --epsilon: invalid number value: 'x'"),
    ],
)
def test_bad_numbers_are_usage_errors_not_tracebacks(capsys, argv, message):
    with pytest.raises(SystemExit, match=r"^2$"):
        main(argv)
    assert message in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "stops" in capsys.readouterr().out


@pytest.mark.integration
def test_hmm_job_prints_profiles_and_writes_trace_and_figures(tmp_path, capsys, no_raw_reference):
    args = ["hmm", "--epsilon", "5", "--states", "2", "--draws", "20", "--tune", "20"]
    code = main([*args, "--output-dir", str(tmp_path), "--no-progressbar", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "5 precinct regions × 53 ISO weeks" in out and "(cells)" in out
    assert "Total: ε = 5, δ = 0" in out and "non-private" not in out.lower()
    assert not [p for p in tmp_path.iterdir() if "NONPRIVATE" in p.name]
    trace = xr.open_datatree(tmp_path / "hmm_precinct_laplace_trace.nc", engine="h5netcdf")
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert (event.mechanism, event.sensitivity) == ("laplace", 12.0)
    assert event.noise_scale == pytest.approx(2.4)  # OpenDP nudges the scale up, never down
    assert trace["released_statistics"]["cell_counts"].shape == (5, 53, 6, 9)
    assert trace["posterior"]["emission_race"].dims == ("chain", "draw", "state", "race")
    for figure in ("states", "emissions"):
        png = image.imread(tmp_path / f"hmm_precinct_laplace_{figure}.png")
        assert png.shape[0] > 200 and png.std() > 0.01


@pytest.mark.integration
def test_hmm_job_with_ops_reports_the_convergence_caveat(tmp_path, capsys):
    args = ["hmm", "--mechanism", "ops", "--epsilon", "5", "--states", "2", "--draws", "5"]
    code = main([*args, "--tune", "5", "--output-dir", str(tmp_path), "--no-progressbar"])
    out = capsys.readouterr().out
    assert code == 0 and "assumes every chain converged" in out
    trace = xr.open_datatree(tmp_path / "hmm_precinct_ops_trace.nc", engine="h5netcdf")
    (event,) = PrivacyLedger.from_datatree(trace).events
    assert event.assumes_convergence and event.worst_case_epsilon > 10 * event.epsilon
    assert trace["posterior"].sizes["draw"] == 1


def test_plan_releases_nothing_under_add_remove_one(capsys):
    assert main(["stops", "--plan", "--neighbouring", "add-remove-one"]) == 2
    assert "--plan is for --mechanism laplace under --neighbouring replace-one" in (
        capsys.readouterr().out
    )


@pytest.mark.integration
def test_plan_prints_the_predicted_widths_and_the_split(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["stops", "--plan", "--seed", "1", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert "nothing is read or released" in out and "equally frequent" in out
    assert re.search(r"ε = 0\.1 +ε = 0\.333 +ε = 1 +ε = 3 +non-private", out)
    assert "Split of ε = 1 for the rates (pymc_dp.allocate): person_search" in out
    assert list(tmp_path.iterdir()) == []  # no trace, no figure: nothing was released
