"""The ``pymc-dp`` command line.

``pymc-dp hmm --epsilon 5 --states 3 [--regions precinct|neighborhood] [--mechanism ops]``
fits the naive-Bayes HMM of Foulds et al. (2016) to region × ISO-week cells of the same stops,
prints each state's emission profile and the ledger, and writes the trace and two figures
(most frequent state per region and week; emission probabilities per state).

``pymc-dp stops --epsilon 1.0`` fits, privately, the person-search rate by perceived race and
the distribution of stop reasons of the Minneapolis stops of 2017, prints the private posterior
next to the non-private one and the privacy ledger, and writes the trace (netCDF) and a forest
plot (PNG). ``--mechanism ops`` (one posterior sample per chain) or ``gibbs-exponential``
(every draw of an exponential-mechanism Gibbs chain) sample truncated priors at a temperature
T instead of releasing Laplace-noised counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

import pymc_dp
from pymc_dp.datasets import load_mpls_stops
from pymc_dp.hmm.plots import plot_emissions, plot_modal_states
from pymc_dp.hmm.relabel import emission_profiles, relabel_states
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.reference import exact_conjugate_posterior
from pymc_dp.stops import RATE, REASON, stops_cells, stops_model

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pymc-dp", description="Differentially private Bayesian analyses with PyMC."
    )
    commands = parser.add_subparsers(dest="command")
    stops = commands.add_parser(
        "stops",
        help="private person-search rates by race and stop reasons, Minneapolis 2017",
        description=(__doc__ or "").strip().splitlines()[2],
    )
    stops.add_argument("--epsilon", type=float, default=1.0, help="total ε (default 1.0)")
    stops.add_argument("--draws", type=int, default=1000)
    stops.add_argument("--tune", type=int, default=200)
    stops.add_argument("--chains", type=int, default=2)
    stops.add_argument(
        "--cores", type=int, default=1, help="1 is fastest for conjugate Gibbs (default 1)"
    )
    stops.add_argument(
        "--mechanism",
        choices=["laplace", "ops", "gibbs-exponential"],
        default="laplace",
        help="laplace (default): noisy counts, then free MCMC; ops: one exact posterior draw "
        "per chain at temperature 2Δ/ε; gibbs-exponential: every draw, all sweeps composed",
    )
    stops.add_argument(
        "--truncation",
        type=float,
        default=0.01,
        help="a0 of the truncated priors of ops and gibbs-exponential (default 0.01)",
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
    )
    hmm.add_argument("--epsilon", type=float, default=5.0, help="total ε (default 5)")
    hmm.add_argument("--states", type=int, default=3, help="number of latent states K (default 3)")
    hmm.add_argument("--regions", choices=["precinct", "neighborhood"], default="precinct")
    hmm.add_argument("--mechanism", choices=["laplace", "ops"], default="laplace")
    hmm.add_argument(
        "--truncation",
        type=float,
        default=100.0,
        help="M of the emission truncation a0 = 1/(M·K_d), used by --mechanism ops (default 100)",
    )
    hmm.add_argument(
        "--projection",
        choices=["cell", "none"],
        default="cell",
        help="laplace: clamp each released count at 0 (cell, default, as Foulds et al.) or keep "
        "the unbiased noisy counts and clamp only per-state sums (none)",
    )
    hmm.add_argument("--draws", type=int, default=100, help="kept sweeps per chain (default 100)")
    hmm.add_argument("--tune", type=int, default=100, help="burn-in sweeps (default 100)")
    hmm.add_argument(
        "--chains",
        type=int,
        default=None,
        help="chains (default 2 for laplace, 1 for ops: each OPS chain's draw costs ε/chains)",
    )
    _add_common_arguments(hmm, _run_hmm)
    return parser


def _add_common_arguments(command: argparse.ArgumentParser, run) -> None:
    command.add_argument("--seed", type=int, default=None, help="seed of the MCMC (not the noise)")
    command.add_argument(
        "--neighbouring", choices=["replace-one", "add-remove-one"], default="replace-one"
    )
    command.add_argument("--output-dir", type=Path, default=Path("pymc_dp_output"))
    command.add_argument("--no-progressbar", action="store_true")
    command.set_defaults(run=run)


def _private_sample(args: argparse.Namespace, model, **options) -> xr.DataTree:
    """``pymc_dp.sample`` with the command's ε, mechanism, neighbours, seed and progress bar."""
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
    stops = load_mpls_stops()
    model = stops_model(stops, args.truncation if tempered else None)
    print(
        f"Minneapolis police stops, 2017: {len(stops):,} records. Privacy unit: one stop "
        f"({args.neighbouring}). Mechanism: {args.mechanism}. Total ε = {args.epsilon:g}, "
        "δ = 0.\n"
    )
    idata = _private_sample(
        args,
        model,
        chains=args.chains,
        cores=args.cores,
        **({} if args.mechanism == "ops" else {"tune": args.tune}),
    )
    reference = exact_conjugate_posterior(
        stops_model(stops), draws=args.draws, chains=args.chains, rng=args.seed
    )
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    one_sample = args.mechanism == "ops"
    print(_comparison(idata, reference, one_sample).to_string())
    print(
        "\nThe non-private columns read the raw records: they are for the data holder's "
        "comparison only and must not be published."
    )
    print(_mechanism_note(ledger, args, len(stops)) + "\n")
    print(_ledger_table(ledger).to_string(index=False))
    print(f"Total: ε = {ledger.epsilon:g}, δ = {ledger.delta:g} ({ledger.composition})")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.mechanism == "laplace" else f"_{args.mechanism}"
    trace_path = args.output_dir / f"stops{suffix}_trace.nc"
    idata.to_netcdf(trace_path, engine="h5netcdf")
    plot_path = args.output_dir / f"stops{suffix}_forest.png"
    _forest_plot(idata, reference, plot_path, f"{args.mechanism}, ε={args.epsilon:g}", one_sample)
    print(f"\nWrote {trace_path} (private trace with ledger) and {plot_path}.")
    print(f"Done in {time.perf_counter() - start:.1f} s.")
    return 0


def _mechanism_note(ledger: pymc_dp.PrivacyLedger, args: argparse.Namespace, n: int) -> str:
    if args.mechanism == "laplace":
        return (
            "The private intervals are the posterior given the noisy statistics (Foulds et al. "
            "2016, §3.2): they do not widen for the Laplace noise. Small groups (low released "
            "n) can be off by several interval widths at small ε."
        )
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


def _run_hmm(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    stops = load_mpls_stops()
    counts = stops_cells(stops, args.regions)
    n_regions, n_weeks, n_features, _ = counts.shape
    ops = args.mechanism == "ops"
    chains = args.chains if args.chains is not None else (1 if ops else 2)
    model = naive_bayes_hmm(counts, args.states, truncation=args.truncation if ops else None)
    print(
        f"Minneapolis police stops, 2017: {len(stops):,} records in {n_regions} "
        f"{args.regions} regions × {n_weeks} ISO weeks, {n_features} features, "
        f"K = {args.states} states.\nPrivacy unit: one stop ({args.neighbouring}). "
        f"Mechanism: {args.mechanism}. Total ε = {args.epsilon:g}, δ = 0.\n"
    )
    idata = _private_sample(
        args, model, projection=args.projection, tune=args.tune, chains=chains, cores=1
    )
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    relabelled = relabel_states(idata)
    with pd.option_context("display.float_format", "{:.3f}".format):
        print("Emission profile of each state (posterior mean; relabelled, state 0 most frequent):")
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
        print(
            "\nThe posterior is given the noisy counts (Foulds et al. 2016, §3.2): its "
            "intervals do not include the Laplace noise."
        )
    print()
    print(_ledger_table(ledger).to_string(index=False))
    print(f"Total: ε = {ledger.epsilon:g}, δ = {ledger.delta:g} ({ledger.composition})")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    stem = f"hmm_{args.regions}_{args.mechanism}"
    trace_path = args.output_dir / f"{stem}_trace.nc"
    relabelled.to_netcdf(trace_path, engine="h5netcdf")
    label = f"{args.mechanism}, ε = {args.epsilon:g}, K = {args.states}"
    states_path = args.output_dir / f"{stem}_states.png"
    plot_modal_states(
        relabelled,
        states_path,
        f"Most frequent state per {args.regions} and week ({label})",
        args.regions,
    )
    emissions_path = args.output_dir / f"{stem}_emissions.png"
    plot_emissions(relabelled, emissions_path, f"Emission probabilities per state ({label})")
    print(f"\nWrote {trace_path}, {states_path} and {emissions_path}.")
    print(f"Done in {time.perf_counter() - start:.1f} s.")
    return 0


def _comparison(idata: xr.DataTree, reference: xr.DataTree, one_sample: bool) -> pd.DataFrame:
    """Private vs non-private, one row per parameter: posterior mean and 94% interval, or the
    released draws (one per chain) under one posterior sample."""
    exact = az.summary(reference, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
    low, high = [c for c in exact.columns if c.startswith("eti")][:2]
    columns: dict[str, pd.Series] = {}
    if "released_statistics" in idata.children:
        released = idata["released_statistics"]["person_search_projected"].sum(
            "person_search_statistic"
        )
        groups = released["person_search_group"].values
        columns["released n"] = pd.Series(
            released.to_numpy(), index=[f"{RATE}[{g}]" for g in groups]
        ).round(1)
    if one_sample:
        columns["private draw(s)"] = _released_draws(idata, exact.index)
    else:
        private = az.summary(idata, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
        columns["private mean"] = private["mean"].astype(float).round(4)
        columns["private 94% CI"] = _interval(private[low], private[high])
        columns["ess_bulk"] = private["ess_bulk"].astype(float).round(0)
        columns["r_hat"] = private["r_hat"].astype(float).round(3)
    columns["non-private mean"] = exact["mean"].astype(float).round(4)
    columns["non-private 94% CI"] = _interval(exact[low], exact[high])
    table = pd.DataFrame({name: col.reindex(exact.index) for name, col in columns.items()})
    table.index.name = "parameter"
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


def _ledger_table(ledger: pymc_dp.PrivacyLedger) -> pd.DataFrame:
    columns = [
        "mechanism",
        "epsilon",
        "delta",
        "sensitivity",
        "neighbouring",
        "variables",
        "noise_backend",
        "noise_scale",
        "temperature",
    ]
    table = pd.DataFrame([{c: getattr(e, c) for c in columns} for e in ledger.events])
    table = table.dropna(axis=1, how="all")  # noise scale or temperature: one applies
    return table.assign(variables=lambda df: df["variables"].map(", ".join))


def _forest_plot(
    idata: xr.DataTree, reference: xr.DataTree, path: Path, label: str, one_sample: bool
) -> None:
    """Person-search rate by race, private vs non-private (posterior mean, 50% and 94%
    intervals); under one posterior sample, the released draws instead of a private interval."""
    if one_sample:
        _released_draws_plot(idata, reference, path, label)
        return
    plot = az.plot_forest(
        {f"private ({label})": idata, "non-private (raw data)": reference},
        var_names=[RATE],
        combined=True,
        ci_kind="eti",
        ci_probs=(0.5, _CI),
        labels=["race"],
        figure_kwargs={"figsize": (8, 6)},
    )
    plot.add_legend("model", loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=2)
    figure = plot.viz["figure"].item()
    figure.suptitle(_PLOT_TITLE + "\n(posterior mean, 50% and 94% intervals)")
    figure.savefig(path, dpi=120, bbox_inches="tight")


_PLOT_TITLE = "Person-search rate by perceived race, Minneapolis stops 2017"


def _released_draws_plot(idata: xr.DataTree, reference: xr.DataTree, path: Path, label: str):
    import matplotlib.pyplot as plt

    exact = reference["posterior"][RATE]
    released = idata["posterior"][RATE]
    races = list(exact["race"].values)
    rows = np.arange(len(races))[::-1]
    quantiles = exact.quantile([0.03, 0.25, 0.75, 0.97], dim=("chain", "draw")).values
    figure, axis = plt.subplots(figsize=(8, 6))
    axis.hlines(rows, quantiles[0], quantiles[3], color="C1", linewidth=1)
    axis.hlines(rows, quantiles[1], quantiles[2], color="C1", linewidth=3)
    axis.plot(exact.mean(("chain", "draw")), rows, "o", color="C1", mfc="white",
              label="non-private (raw data): mean, 50% and 94% intervals")
    for chain in released["chain"].values:
        axis.plot(released.sel(chain=chain).values.ravel(), rows + 0.2, "x", color="C0",
                  markersize=8, label=f"private ({label}): released draw" if chain == 0 else None)
    axis.set_yticks(rows, races)
    axis.set_xlabel("person-search rate")
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=1, frameon=False)
    axis.set_title(_PLOT_TITLE + "\n(one released draw per chain)")
    axis.spines[["top", "right"]].set_visible(False)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
