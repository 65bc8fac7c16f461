"""The ``pymc-dp`` command line.

``pymc-dp hmm --epsilon 5 --states 3 [--regions precinct|neighborhood] [--mechanism ops]``
fits the naive-Bayes HMM of Foulds et al. (2016) to region × ISO-week cells of the same stops,
prints each state's emission profile and the ledger, and writes the trace and two figures
(most frequent state per region and week; emission probabilities per state).

``pymc-dp stops --epsilon 1.0`` fits, privately, the person-search rate by perceived race and
the distribution of stop reasons of the Minneapolis stops of 2017, prints the private
posterior and the privacy ledger, and writes the private trace (netCDF) and a private forest
plot (PNG).
``--mechanism ops`` (one posterior sample per chain) or ``gibbs-exponential`` (every draw of
an exponential-mechanism Gibbs chain) sample truncated priors at a temperature T instead of
releasing Laplace-noised counts.

By default nothing computed from the raw records is printed or written. ``--nonprivate-
comparison`` (data holder only) adds the raw-data posterior of :mod:`pymc_dp.reference`: a
section headed "NON-PRIVATE — data holder only, do not publish" and a separate figure whose
file name contains ``NONPRIVATE``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

import pymc_dp
from pymc_dp.datasets import MPLS_STOPS_CATEGORIES, load_mpls_stops
from pymc_dp.hmm.plots import plot_emissions, plot_modal_states
from pymc_dp.hmm.relabel import emission_profiles, relabel_states
from pymc_dp.inference import DEFAULT_INFERENCE
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.reference import NONPRIVATE_HEADING, exact_conjugate_posterior
from pymc_dp.stops import (
    HMM_FEATURE_LABELS,
    RATE,
    REASON,
    stops_cells,
    stops_model,
    stops_planning_model,
)
from pymc_dp.traces import RELEASED_GROUP

__all__ = ["main"]

_CI = 0.94


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pymc-dp`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)


def _positive(text: str) -> float:
    """An option's finite number > 0 (ε, a truncation), refused by argparse otherwise."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _probability(text: str) -> float:
    """An option's number strictly between 0 and 1 (δ)."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number with 0 < δ < 1, got {text}")
    return value


_positive.__name__ = _probability.__name__ = "number"  # argparse's "invalid number value"


def _integer(low: int):
    """The type of an integer option >= ``low`` (draws, chains, tune, seed)."""

    def integer(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text}")
        return value

    integer.__name__ = "integer"  # argparse's "invalid integer value: 'x'"
    return integer


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default: argparse's ``(default: …)``, unless the help
    states the default itself (one that depends on another option, or None meaning "chosen
    for you")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        return text if "(default" in text else super()._get_help_string(action)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pymc-dp",
        description=(
            "Differentially private Bayesian analyses with PyMC, on the bundled Minneapolis "
            "police stops of 2017: each command releases private statistics or posterior "
            "draws, prints the private posterior and the privacy ledger, and writes the trace "
            "and figures to --output-dir."
        ),
        epilog="Run 'pymc-dp COMMAND --help' for the options of a command.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {pymc_dp.__version__}")
    commands = parser.add_subparsers(
        dest="command", title="commands", metavar="COMMAND", help="the analysis to run"
    )
    stops = commands.add_parser(
        "stops",
        help="private person-search rates by race and stop reasons, Minneapolis 2017",
        description=(
            "Fit, privately, the person-search rate by perceived race and the distribution of "
            "stop reasons of the Minneapolis police stops of 2017. Prints and writes only "
            "private results (posterior, released statistics, ledger, trace, figure) unless "
            "--nonprivate-comparison is given."
        ),
        formatter_class=_HelpFormatter,
    )
    stops.add_argument("--epsilon", type=_positive, default=1.0, help="total privacy budget ε")
    stops.add_argument("--draws", type=_integer(1), default=1000, help="kept draws per chain")
    stops.add_argument(
        "--tune", type=_integer(0), default=200, help="tuning (burn-in) draws per chain"
    )
    stops.add_argument(
        "--chains",
        type=_integer(1),
        default=2,
        help="chains; free for laplace, ops and gibbs-exponential split ε over them",
    )
    stops.add_argument(
        "--cores", type=_integer(1), default=1, help="processes; 1 is fastest for conjugate Gibbs"
    )
    stops.add_argument(
        "--mechanism",
        choices=["laplace", "ops", "gibbs-exponential"],
        default="laplace",
        help="laplace: noisy counts, then free MCMC; ops: one exact posterior draw per chain "
        "at temperature 2Δ/ε; gibbs-exponential: every draw, all sweeps composed",
    )
    stops.add_argument(
        "--noise",
        choices=["laplace", "gaussian"],
        default="laplace",
        help="the noise of the released counts (--mechanism laplace only). laplace: (ε, 0)-DP; "
        "gaussian: (ε, δ)-DP with L2 sensitivity, needs --delta (docs: the Gaussian mechanism)",
    )
    stops.add_argument(
        "--delta",
        type=_probability,
        default=None,
        help="total δ of --noise gaussian, 0 < δ < 1 (e.g. 1e-6), split over the two releases "
        "(default: none; required by --noise gaussian)",
    )
    stops.add_argument(
        "--truncation",
        type=_positive,
        default=0.01,
        help="a0 of the truncated priors of ops and gibbs-exponential",
    )
    stops.add_argument(
        "--plan",
        action="store_true",
        help="release nothing: print pymc_dp.plan's predicted interval widths at ε/10, ε/3, ε "
        "and 3ε from simulated stops (public n; equal race groups assumed, every outcome "
        "recorded), and pymc_dp.allocate's split of ε between the two releases for the rates",
    )
    stops.add_argument(
        "--nonprivate-comparison",
        action="store_true",
        help="for the data holder only: reads the raw data, not differentially private, never "
        "publish. Also prints the non-private posterior under a NON-PRIVATE heading and writes "
        "stops[_<mechanism>]_forest_NONPRIVATE_comparison.png",
    )
    _add_common_arguments(stops, _run_stops)
    hmm = commands.add_parser(
        "hmm",
        help="private naive-Bayes HMM of the stops on region × ISO-week cells (Foulds et al.)",
        description=(
            "Fit the naive-Bayes HMM of Foulds et al. (2016, §5) to the Minneapolis stops of "
            "2017 on region × ISO-week cells, privately: Laplace noise on the count tensor "
            "(default) or one posterior sample at temperature 2Δ/ε (--mechanism ops)."
        ),
        formatter_class=_HelpFormatter,
    )
    hmm.add_argument("--epsilon", type=_positive, default=5.0, help="total privacy budget ε")
    hmm.add_argument("--states", type=_integer(1), default=3, help="number of latent states K")
    hmm.add_argument(
        "--regions",
        choices=["precinct", "neighborhood"],
        default="precinct",
        help="the regions of the cells (rows of the HMM)",
    )
    hmm.add_argument(
        "--mechanism",
        choices=["laplace", "ops"],
        default="laplace",
        help="laplace: noisy count tensor, then free Gibbs sampling; ops: one posterior sample "
        "per chain at temperature 2Δ/ε",
    )
    hmm.add_argument(
        "--truncation",
        type=_positive,
        default=100.0,
        help="M of the emission truncation a0 = 1/(M·K_d), used by --mechanism ops",
    )
    hmm.add_argument(
        "--projection",
        choices=["cell", "none"],
        default="cell",
        help="laplace: clamp each released count at 0 (cell, as Foulds et al.) or keep the "
        "unbiased noisy counts and clamp only per-state sums (none)",
    )
    hmm.add_argument("--draws", type=_integer(1), default=100, help="kept sweeps per chain")
    hmm.add_argument("--tune", type=_integer(0), default=100, help="burn-in sweeps")
    hmm.add_argument(
        "--chains",
        type=_integer(1),
        default=None,
        help="chains (default: 2 for laplace, 1 for ops: each OPS chain's draw costs ε/chains)",
    )
    _add_common_arguments(hmm, _run_hmm)
    summary = commands.add_parser(
        "report",
        help="the privacy report of a saved private trace: a figure and an HTML page",
        description=(
            "Read a trace written by pymc-dp stops / hmm or pymc_dp.to_netcdf and write its "
            "privacy report (pymc_dp.report): the ε spent per release, the released "
            "statistics with their noise, the private interval widths and what the ε lets "
            "anyone infer about one record. Reads only the trace: free post-processing."
        ),
        formatter_class=_HelpFormatter,
    )
    summary.add_argument("trace", type=Path, help="the trace (netCDF, engine h5netcdf)")
    summary.add_argument(
        "--output",
        type=Path,
        default=None,
        help="the figure to write, PNG, PDF or SVG by its suffix (default: the trace's name "
        "with _report.png)",
    )
    summary.add_argument(
        "--html",
        type=Path,
        default=None,
        help="also write the report's tables as HTML to this file (default: none)",
    )
    summary.set_defaults(run=_run_report)
    return parser


def _plan_stops(args: argparse.Namespace, n_stops: int) -> int:
    """``pymc-dp stops --plan``: the planner's table and the allocation; nothing released."""
    if args.mechanism != "laplace" or args.neighbouring != "replace-one":
        print("error: --plan is for --mechanism laplace under --neighbouring replace-one")
        return 2
    model, stand_ins = stops_planning_model(n_stops)
    grid = sorted({args.epsilon / 10, args.epsilon / 3, args.epsilon, 3 * args.epsilon})
    print(
        f"Plan for the Minneapolis stops ({n_stops:,} stops, public under replace-one): "
        "nothing is read or released. Assumed: every stop has a recorded person-search "
        "outcome and the races are equally frequent (the real numbers are private).\n"
    )
    options = dict(model=model, data=stand_ins, random_seed=args.seed, draws=400, tune=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = pymc_dp.plan(grid, datasets=10, var_names=[RATE], **options)
        allocation = pymc_dp.allocate(args.epsilon, datasets=6, var_names=[RATE], **options)
    table = table.assign(race=table["parameter"].str.slice(len(RATE) + 1, -1))
    widths = table.pivot(index="race", columns="epsilon", values="width_private")
    widths.columns = [f"ε = {eps:.3g}" for eps in widths.columns]
    widths["non-private"] = table.groupby("race")["width_nonprivate"].first()
    print(
        "Predicted width of the 90% interval of each person-search rate (mean of 10 simulated "
        "data sets; the chance a release halves the prior's width is "
        f"at least {table['informative'].min():.0%} in every row):"
    )
    print(widths.loc[list(MPLS_STOPS_CATEGORIES["race"])].to_string(float_format="%.4f"))
    split = ", ".join(f"{name} {eps:.3g}" for name, eps in allocation.epsilon.items())
    print(
        f"\nSplit of ε = {args.epsilon:g} for the rates (pymc_dp.allocate): {split}; the rates' "
        f"variance {allocation.variance_ratio:.2f}× the equal split's."
    )
    return 0


def _run_report(args: argparse.Namespace) -> int:
    if not args.trace.is_file():
        print(f"error: no such trace file: {args.trace}")
        return 2
    try:
        with xr.open_datatree(args.trace, engine="h5netcdf") as loaded:
            trace = loaded.load()
    except (OSError, ValueError) as error:
        print(f"error: {args.trace} is not a netCDF trace ({type(error).__name__})")
        return 2
    try:
        summary = pymc_dp.report(trace)
    except KeyError:
        print(f"error: {args.trace} carries no privacy ledger (not a trace from pymc_dp)")
        return 2
    output = args.output or args.trace.with_name(f"{args.trace.stem}_report.png")
    summary.savefig(output)
    print(f"Privacy ledger of {args.trace}:")
    print(_ledger_table(summary.ledger).to_string(index=False))
    print(f"Total: ε = {summary.ledger.epsilon:g}, δ = {summary.ledger.delta:g}")
    for note in summary.notes:
        print(f"warning: {note}: the ledger does not cover it")
    if args.html is not None:
        args.html.write_text(summary.to_html(), encoding="utf-8")
        print(f"Wrote {output} and {args.html}.")
    else:
        print(f"Wrote {output}.")
    return 0


def _add_common_arguments(command: argparse.ArgumentParser, run) -> None:
    command.add_argument(
        "--seed",
        type=_integer(0),
        default=None,
        help="seed of the MCMC, never of the privacy noise (default: none, fresh entropy)",
    )
    command.add_argument(
        "--neighbouring",
        choices=["replace-one", "add-remove-one"],
        default="replace-one",
        help="the neighbouring relation: datasets that differ by one stop replaced "
        "(the number of stops is public) or one stop added or removed",
    )
    command.add_argument(
        "--inference",
        choices=["noise-aware", "plugin"],
        default=None,
        help="laplace only: how the released statistics are read. noise-aware: the true "
        "statistics are latent and the Laplace noise is the likelihood of the release, so "
        "intervals include the noise; plugin: the noisy statistics as if exact (Foulds et al. "
        "2016), intervals too narrow at small counts. Same release, same ε "
        f"(default: {DEFAULT_INFERENCE})",
    )
    command.add_argument(
        "--output-dir",
        type=Path,
        default=Path("pymc_dp_output"),
        help="folder for the trace (netCDF) and the figures (PNG), created if missing",
    )
    command.add_argument(
        "--no-progressbar", action="store_true", help="hide the sampler's progress bar"
    )
    command.set_defaults(run=run)


def _private_sample(args: argparse.Namespace, model, **options) -> xr.DataTree:
    """``pymc_dp.sample`` with the command's ε, mechanism, inference, neighbours, seed and
    progress bar."""
    if args.inference is not None and args.mechanism != "laplace":
        raise SystemExit(f"--inference is for --mechanism laplace, not {args.mechanism}")
    if args.inference is not None:
        options["inference"] = args.inference
    if getattr(args, "noise", "laplace") == "gaussian":
        options.update(noise="gaussian", delta=args.delta)
    return pymc_dp.sample(
        args.draws,
        model=model,
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        neighbouring=args.neighbouring,
        random_seed=args.seed,
        progressbar=not args.no_progressbar,
        compute_convergence_checks=False,
        **options,
    )


def _run_stops(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    tempered = args.mechanism != "laplace"
    if tempered and args.neighbouring != "replace-one":
        print("error: --mechanism ops and gibbs-exponential are calibrated for replace-one")
        return 2
    if args.noise == "gaussian" and (tempered or args.delta is None):
        print("error: --noise gaussian is for --mechanism laplace and needs --delta (0 < δ < 1)")
        return 2
    if args.noise == "laplace" and args.delta is not None:
        print("error: --delta is the δ of --noise gaussian; Laplace noise spends no δ")
        return 2
    stops = load_mpls_stops()
    if args.plan:
        return _plan_stops(args, len(stops))
    model = stops_model(stops, args.truncation if tempered else None)
    print(
        f"Minneapolis police stops, 2017{_record_count(len(stops), args.neighbouring)}. "
        f"Privacy unit: one stop ({args.neighbouring}). Mechanism: {_mechanism_name(args)}. "
        f"Total ε = {args.epsilon:g}, δ = {args.delta or 0:g}.\n"
    )
    idata = _private_sample(
        args,
        model,
        chains=args.chains,
        cores=args.cores,
        **({} if args.mechanism == "ops" else {"tune": args.tune}),
    )
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    one_sample = args.mechanism == "ops"
    private = _private_table(idata, one_sample)
    print("\n" + _PRIVATE_HEADINGS[args.mechanism])
    print(private.to_string())
    if "released_statistics" in idata.children:
        print(
            "released count: the noisy statistic, clamped at 0 (stops with a recorded "
            "person-search outcome per race; stops per reason); the posterior is conditioned "
            "on the release as published."
        )
    print("\n" + _mechanism_note(idata, ledger, args, len(stops)) + "\n")
    print("Privacy ledger:")
    print(_ledger_table(ledger).to_string(index=False))
    print(f"Total: ε = {ledger.epsilon:g}, δ = {ledger.delta:g} ({ledger.composition})")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.mechanism == "laplace" else f"_{args.mechanism}"
    trace_path = args.output_dir / f"stops{suffix}_trace.nc"
    pymc_dp.to_netcdf(idata, trace_path)
    plot_path = args.output_dir / f"stops{suffix}_forest.png"
    label = _private_label(ledger, args)
    _rate_figure(idata, plot_path, label, one_sample)
    print(f"\nWrote {trace_path} (private trace with ledger) and {plot_path} (private figure).")
    if args.nonprivate_comparison:
        reference = exact_conjugate_posterior(
            stops_model(stops), draws=args.draws, chains=args.chains, rng=args.seed
        )
        comparison_path = args.output_dir / f"stops{suffix}_forest_NONPRIVATE_comparison.png"
        _nonprivate_section(private, reference, idata, comparison_path, label, one_sample)
    print(f"Done in {time.perf_counter() - start:.1f} s.")
    return 0


_PRIVATE_HEADINGS = {
    "laplace": "Private posterior (computed only from the released statistics):",
    "ops": "Private results: the released posterior draws, one per chain:",
    "gibbs-exponential": "Private posterior (summaries of the released draws):",
}


def _record_count(n: int, neighbouring: str) -> str:
    """The record count, which is public only when neighbours replace a record."""
    if neighbouring == "replace-one":
        return f": {n:,} records (n is public under replace-one)"
    return " (the number of records is private under add-remove-one and is not shown)"


def _private_label(ledger: pymc_dp.PrivacyLedger, args: argparse.Namespace) -> str:
    """What the figure's private values cost: the rates' release, out of the total."""
    rates = next(e for e in ledger.events if RATE in e.variables)
    spent = f"ε = {rates.epsilon:g}"
    if rates.epsilon != ledger.epsilon:
        spent += f" of total ε = {ledger.epsilon:g}"
    return f"private, {_mechanism_name(args)}, {spent}"


def _mechanism_name(args: argparse.Namespace) -> str:
    """The mechanism as the ledger names it (the released statistics' noise, or the
    posterior-sampling mechanism)."""
    return "gaussian" if getattr(args, "noise", "laplace") == "gaussian" else args.mechanism


def _nonprivate_section(
    private: pd.DataFrame,
    reference: xr.DataTree,
    idata: xr.DataTree,
    path: Path,
    label: str,
    one_sample: bool,
) -> None:
    """The data holder's comparison with the raw-data posterior: printed under its own
    heading and drawn in a separate file whose name says NONPRIVATE."""
    rule = "=" * 88
    print(f"\n{rule}\n{NONPRIVATE_HEADING}\n{rule}")
    print(
        "Computed from the raw records (pymc_dp.reference.exact_conjugate_posterior): not "
        "differentially private.\nNothing in this section, nor the figure below, may be "
        "published or shared."
    )
    print(_comparison(private, reference, one_sample).to_string())
    _rate_figure(idata, path, label, one_sample, reference=reference)
    print(f"Wrote {path} (NON-PRIVATE comparison figure: do not publish).")
    print(f"{rule}\nEnd of the NON-PRIVATE section.\n{rule}")


def _mechanism_note(
    idata: xr.DataTree, ledger: pymc_dp.PrivacyLedger, args: argparse.Namespace, n: int
) -> str:
    if args.mechanism == "laplace":
        return _laplace_note(idata[RELEASED_GROUP].attrs["inference"], args.noise)
    (event,) = ledger.events
    if args.mechanism == "ops":
        return (
            f"One exact draw per chain of the posterior at temperature T = "
            f"{event.temperature:.3g} (Δ = {event.sensitivity:.3g} nats, priors truncated at "
            f"{args.truncation:g}; Foulds et al. 2016, §3.1). No convergence is assumed. One "
            f"draw varies like a posterior draw from 1/T of the records (n/T = "
            f"{n / event.temperature:,.0f} of {n:,}; asymptotic relative efficiency 1 + T "
            "against 2 for Laplace, §3.3)."
        )
    return (
        f"Every draw is released: all sweeps of all chains, tuning included, compose at "
        f"temperature T = {event.temperature:.3g} (Foulds et al. 2016, §4.1). The draws come "
        f"from a posterior flattened by T, as if from 1/T of the records (n/T = "
        f"{n / event.temperature:,.1f} of {n:,}): with this many sweeps, little is learned at "
        "this ε."
    )


def _laplace_note(inference: str, noise: str = "laplace") -> str:
    name = noise.capitalize()
    if inference == "noise-aware":
        return (
            f"Noise-aware inference: the true statistics are latent and the {name} noise is the "
            "likelihood of the release (Bernstein & Sheldon 2018; Ju et al. 2022), so the "
            "private intervals widen for the noise where it matters (small counts, small ε)."
        )
    return (
        "Plug-in inference: the posterior is given the noisy statistics as if exact (Foulds et "
        f"al. 2016, §3.2); its intervals do not widen for the {name} noise. Small groups (low "
        "released count) can be off by several interval widths at small ε."
    )


def _run_hmm(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    stops = load_mpls_stops()
    counts = stops_cells(stops, args.regions)
    n_regions, n_weeks, n_features, _ = counts.shape
    ops = args.mechanism == "ops"
    chains = args.chains if args.chains is not None else (1 if ops else 2)
    model = naive_bayes_hmm(counts, args.states, truncation=args.truncation if ops else None)
    print(
        f"Minneapolis police stops, 2017{_record_count(len(stops), args.neighbouring)}.\n"
        f"Cells: {n_regions} {args.regions} regions × {n_weeks} ISO weeks, {n_features} "
        f"features, K = {args.states} states.\nPrivacy unit: one stop ({args.neighbouring}). "
        f"Mechanism: {args.mechanism}. Total ε = {args.epsilon:g}, δ = 0.\n"
    )
    idata = _private_sample(
        args, model, projection=args.projection, tune=args.tune, chains=chains, cores=1
    )
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    relabelled = relabel_states(idata)
    with pd.option_context("display.float_format", "{:.3f}".format):
        what = "mean of the released draws" if ops else "posterior mean"
        print(
            f"\nPrivate emission profile of each state ({what}; relabelled, state 0 most "
            "frequent;\nlast row: share of region-weeks in each state):"
        )
        print(emission_profiles(relabelled).to_string())
    if ops:
        (event,) = ledger.events
        print(
            f"\nOPS: one draw per chain at temperature T = {event.temperature:.3g} (Δ = "
            f"{event.sensitivity:.3g} nats). The guarantee ε = {event.epsilon:g} assumes every "
            f"chain converged; without that assumption the whole run costs ε = "
            f"{event.worst_case_epsilon:,.0f} (composition of every update, burn-in included)."
        )
    else:
        print("\n" + _laplace_note(idata[RELEASED_GROUP].attrs["inference"]))
    print("\nPrivacy ledger:")
    print(_ledger_table(ledger).to_string(index=False))
    print(f"Total: ε = {ledger.epsilon:g}, δ = {ledger.delta:g} ({ledger.composition})")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    stem = f"hmm_{args.regions}_{args.mechanism}"
    trace_path = args.output_dir / f"{stem}_trace.nc"
    pymc_dp.to_netcdf(relabelled, trace_path)
    label = f"private, {args.mechanism}, ε = {args.epsilon:g}, K = {args.states}"
    states_path = args.output_dir / f"{stem}_states.png"
    plot_modal_states(
        relabelled,
        states_path,
        f"Minneapolis police stops 2017: most frequent state per {args.regions} and week\n"
        f"({label}; states relabelled, 0 most frequent)",
        args.regions,
    )
    emissions_path = args.output_dir / f"{stem}_emissions.png"
    plot_emissions(
        relabelled,
        emissions_path,
        f"Minneapolis police stops 2017: emission probabilities per state, "
        f"{'released draw' if ops else 'posterior mean'} ({label})",
        feature_labels=HMM_FEATURE_LABELS,
    )
    print(
        f"\nWrote {trace_path} (private trace with ledger), {states_path} and "
        f"{emissions_path} (private figures)."
    )
    print(f"Done in {time.perf_counter() - start:.1f} s.")
    return 0


def _private_table(idata: xr.DataTree, one_sample: bool) -> pd.DataFrame:
    """One row per parameter, from the private trace only: the released count it is
    conditioned on (Laplace), then the posterior mean and 94% interval, or the released draws
    (one per chain) under one posterior sample."""
    index = _parameter_index(idata)
    columns: dict[str, pd.Series] = {}
    if "released_statistics" in idata.children:
        columns["released count"] = _released_counts(idata).round(1)
    if one_sample:
        columns["private draw(s)"] = _released_draws(idata, index)
    else:
        private = az.summary(idata, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
        low, high = [c for c in private.columns if c.startswith("eti")][:2]
        columns["private mean"] = private["mean"].astype(float).round(4)
        columns["private 94% CI"] = _interval(private[low], private[high])
        columns["ess_bulk"] = private["ess_bulk"].astype(float).round(0)
        columns["r_hat"] = private["r_hat"].astype(float).round(3)
    table = pd.DataFrame({name: col.reindex(index) for name, col in columns.items()})
    table.index.name = "parameter"
    return table


def _parameter_index(idata: xr.DataTree) -> pd.Index:
    names = []
    for name in (RATE, REASON):
        array = idata["posterior"][name]
        (dim,) = (d for d in array.dims if d not in ("chain", "draw"))
        names += [f"{name}[{label}]" for label in array[dim].values]
    return pd.Index(names)


def _released_counts(idata: xr.DataTree) -> pd.Series:
    """The released (noisy, clamped) statistics behind each parameter: per race, the stops
    with a recorded person-search outcome; per reason, the stops with that reason."""
    released = idata["released_statistics"]
    search = released["person_search_projected"].sum("person_search_statistic")
    reasons = released["stop_reason_projected"].sum("stop_reason_group").values
    labels = idata["posterior"][REASON]["reason"].values
    values = {
        f"{RATE}[{g}]": float(v)
        for g, v in zip(search["person_search_group"].values, search.values, strict=True)
    }
    values |= {f"{REASON}[{r}]": float(v) for r, v in zip(labels, reasons, strict=True)}
    return pd.Series(values)


def _comparison(private: pd.DataFrame, reference: xr.DataTree, one_sample: bool) -> pd.DataFrame:
    """NON-PRIVATE: the private estimates next to the raw-data posterior (mean, 94% interval)."""
    exact = az.summary(reference, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
    low, high = [c for c in exact.columns if c.startswith("eti")][:2]
    kept = ["private draw(s)"] if one_sample else ["private mean", "private 94% CI"]
    table = private[kept].copy()
    table["non-private mean"] = exact["mean"].astype(float).round(4).reindex(table.index)
    table["non-private 94% CI"] = _interval(exact[low], exact[high]).reindex(table.index)
    return table


def _released_draws(idata: xr.DataTree, index: pd.Index) -> pd.Series:
    """Each parameter's released draws, one per chain, as text."""
    values = {}
    for name in (RATE, REASON):
        array = idata["posterior"][name]
        dim = next(d for d in array.dims if d not in ("chain", "draw"))
        for label in array[dim].values:
            draws = array.sel({dim: label}).values.ravel()
            values[f"{name}[{label}]"] = ", ".join(f"{v:.3f}" for v in draws)
    return pd.Series(values).reindex(index)


def _interval(low: pd.Series, high: pd.Series) -> pd.Series:
    return pd.Series(
        [f"[{a:.3f}, {b:.3f}]" for a, b in zip(low.astype(float), high.astype(float), strict=True)],
        index=low.index,
    )


_LEDGER_COLUMNS = (
    "mechanism",
    "epsilon",
    "delta",
    "sensitivity",
    "neighbouring",
    "variables",
    "noise_backend",
    "noise_scale",
    "temperature",
)


def _ledger_table(ledger: pymc_dp.PrivacyLedger) -> pd.DataFrame:
    return ledger.to_dataframe(_LEDGER_COLUMNS)


_PLOT_TITLE = "Person-search rate by perceived race, Minneapolis police stops 2017"
_X_LABEL = (
    "person-search rate (share of stops with a recorded outcome where the person was searched)"
)
_WIDE = 0.5  # a 94% interval wider than this says little: drawn clipped, with its bounds in text


def _rate_figure(
    idata: xr.DataTree,
    path: Path,
    label: str,
    one_sample: bool,
    reference: xr.DataTree | None = None,
) -> None:
    """Person-search rate by race from the private trace: posterior mean, 50% and 94%
    intervals, or the released draws under one posterior sample. With ``reference`` (the
    raw-data posterior), a NON-PRIVATE comparison figure, titled as such."""
    import matplotlib.pyplot as plt

    private = idata["posterior"][RATE]
    races = [str(r) for r in private["race"].values]
    rows = np.arange(len(races))[::-1].astype(float)
    offset = 0.15 if reference is not None else 0.0
    figure, axis = plt.subplots(figsize=(9, 6.5))
    bands = []  # (quantiles, rows, colour, text above the line?, why the interval is wide)
    if one_sample:
        for chain in private["chain"].values:
            axis.plot(
                private.sel(chain=chain).values.ravel(),
                rows + offset,
                "x",
                color="C0",
                markersize=8,
                label=f"{label}: released draw (one per chain)" if chain == 0 else None,
            )
    else:
        quantiles = _interval_band(axis, private, rows + offset, "C0", f"{label}: posterior")
        bands.append((quantiles, rows + offset, "C0", True, "few released records"))
    if reference is not None:
        exact = reference["posterior"][RATE].sel(race=private["race"].values)
        quantiles = _interval_band(axis, exact, rows - offset, "C1", "NON-PRIVATE (raw data)")
        bands.append((quantiles, rows - offset, "C1", False, "few raw records"))
    ticks = races
    if "released_statistics" in idata.children:
        counts = _released_counts(idata)
        ticks = [f"{r}\nreleased n ≈ {counts[f'{RATE}[{r}]']:,.0f}" for r in races]
    axis.set_yticks(rows, ticks, fontsize=9)
    axis.set_ylim(rows.min() - 0.6, rows.max() + 0.6)
    _zoom(axis, bands, zoom=not one_sample)
    axis.set_xlabel(_X_LABEL)
    axis.grid(axis="x", alpha=0.3)
    axis.spines[["top", "right"]].set_visible(False)
    how = "one released draw per chain" if one_sample else "posterior mean, 50% and 94% intervals"
    if reference is None:
        axis.set_title(f"{_PLOT_TITLE}\n{label} ({how})", fontsize=11)
    else:
        axis.set_title(f"{_PLOT_TITLE}\nprivate vs non-private ({how})", fontsize=11)
        figure.suptitle(NONPRIVATE_HEADING, color="red", fontweight="bold", fontsize=13)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=1, frameon=False)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def _zoom(axis, bands: list, zoom: bool) -> None:
    """x from 0 to the reach of the informative intervals (the whole [0, 1] for released
    draws); an interval wider than ``_WIDE`` that the axis clips has its bounds written above
    (private) or below (comparison) its line."""
    wide = [q[3] - q[0] > _WIDE for q, *_ in bands]
    narrow = [q[:, ~w] for (q, *_), w in zip(bands, wide, strict=True)]
    reach = max((float(q.max()) for q in narrow if q.size), default=1.0)
    if not zoom or reach > 0.8:
        axis.set_xlim(0.0, 1.0)
        return
    high = min(1.0, reach * 1.15 + 0.01)
    axis.set_xlim(0.0, high)
    for (quantiles, rows, colour, above, why), clipped in zip(bands, wide, strict=True):
        for row in np.flatnonzero(clipped):
            low, top = quantiles[0, row], quantiles[3, row]
            if top <= high:
                continue
            axis.annotate(
                f"94% interval [{low:.2f}, {top:.2f}], "
                f"{'off the axis' if low >= high else 'clipped'}: {why}",
                (high * 0.02, rows[row]),
                xytext=(0, 4 if above else -4),
                textcoords="offset points",
                va="bottom" if above else "top",
                fontsize=8,
                color=colour,
            )


def _interval_band(axis, draws: xr.DataArray, rows: np.ndarray, colour: str, label: str):
    """Mean (circle), 50% (thick) and 94% (thin) equal-tailed intervals, one row per race."""
    quantiles = draws.quantile([0.03, 0.25, 0.75, 0.97], dim=("chain", "draw")).values
    axis.hlines(rows, quantiles[0], quantiles[3], color=colour, linewidth=1)
    axis.hlines(rows, quantiles[1], quantiles[2], color=colour, linewidth=3)
    axis.plot(
        draws.mean(("chain", "draw")).values,
        rows,
        "o",
        color=colour,
        mfc="white",
        label=f"{label} mean, 50% and 94% intervals",
    )
    return quantiles


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
