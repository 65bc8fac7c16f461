"""The ``pymc-dp`` command line.

``pymc-dp stops --epsilon 1.0`` fits, privately, the person-search rate by perceived race and
the distribution of stop reasons of the Minneapolis stops of 2017, prints the private posterior
next to the non-private one and the privacy ledger, and writes the trace (netCDF) and a forest
plot (PNG).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import arviz as az
import pandas as pd
import xarray as xr

import pymc_dp
from pymc_dp.datasets import load_mpls_stops
from pymc_dp.reference import exact_conjugate_posterior
from pymc_dp.stops import RATE, REASON, stops_model

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
    stops.add_argument("--seed", type=int, default=None, help="seed of the MCMC (not the noise)")
    stops.add_argument(
        "--neighbouring", choices=["replace-one", "add-remove-one"], default="replace-one"
    )
    stops.add_argument("--output-dir", type=Path, default=Path("pymc_dp_output"))
    stops.add_argument("--no-progressbar", action="store_true")
    stops.set_defaults(run=_run_stops)
    return parser


def _run_stops(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    stops = load_mpls_stops()
    model = stops_model(stops)
    print(
        f"Minneapolis police stops, 2017: {len(stops):,} records. Privacy unit: one stop "
        f"({args.neighbouring}). Total ε = {args.epsilon:g}, δ = 0.\n"
    )
    with model:
        idata = pymc_dp.sample(
            args.draws,
            epsilon=args.epsilon,
            neighbouring=args.neighbouring,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=args.seed,
            progressbar=not args.no_progressbar,
            compute_convergence_checks=False,
        )
        reference = exact_conjugate_posterior(
            model, draws=args.draws, chains=args.chains, rng=args.seed
        )
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    print(_comparison(idata, reference).to_string())
    print(
        "\nThe non-private columns read the raw records: they are for the data holder's "
        "comparison only and must not be published.\n"
        "The private intervals are the posterior given the noisy statistics (Foulds et al. "
        "2016, §3.2): they do not widen for the Laplace noise. Small groups (low released n) "
        "can be off by several interval widths at small ε.\n"
    )
    print(_ledger_table(ledger).to_string(index=False))
    print(f"Total: ε = {ledger.epsilon:g}, δ = {ledger.delta:g} ({ledger.composition})")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    trace_path = args.output_dir / "stops_trace.nc"
    idata.to_netcdf(trace_path, engine="h5netcdf")
    plot_path = args.output_dir / "stops_forest.png"
    _forest_plot(idata, reference, plot_path, args.epsilon)
    print(f"\nWrote {trace_path} (private trace with ledger) and {plot_path}.")
    print(f"Done in {time.perf_counter() - start:.1f} s.")
    return 0


def _comparison(idata: xr.DataTree, reference: xr.DataTree) -> pd.DataFrame:
    """Posterior mean and 94% interval, private vs non-private, one row per parameter."""
    private = az.summary(idata, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
    exact = az.summary(reference, var_names=[RATE, REASON], ci_prob=_CI, ci_kind="eti")
    low, high = [c for c in private.columns if c.startswith("eti")][:2]
    released = idata["released_statistics"]["person_search_projected"].sum(
        "person_search_statistic"
    )
    released_n = pd.Series(
        released.to_numpy(), index=[f"{RATE}[{g}]" for g in released["person_search_group"].values]
    )
    table = pd.DataFrame(
        {
            "released n": released_n.reindex(private.index).round(1),
            "private mean": private["mean"].astype(float).round(4),
            "private 94% CI": _interval(private[low], private[high]),
            "ess_bulk": private["ess_bulk"].astype(float).round(0),
            "r_hat": private["r_hat"].astype(float).round(3),
            "non-private mean": exact["mean"].astype(float).round(4),
            "non-private 94% CI": _interval(exact[low], exact[high]),
        }
    )
    table.index.name = "parameter"
    return table


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
    ]
    return pd.DataFrame([{c: getattr(e, c) for c in columns} for e in ledger.events]).assign(
        variables=lambda df: df["variables"].map(", ".join)
    )


def _forest_plot(idata: xr.DataTree, reference: xr.DataTree, path: Path, epsilon: float) -> None:
    plot = az.plot_forest(
        {f"private (ε={epsilon:g})": idata, "non-private (raw data)": reference},
        var_names=[RATE],
        combined=True,
        ci_kind="eti",
        ci_probs=(0.5, _CI),
        labels=["race"],
        figure_kwargs={"figsize": (8, 6)},
    )
    plot.add_legend("model", loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=2)
    figure = plot.viz["figure"].item()
    figure.suptitle(
        "Person-search rate by perceived race, Minneapolis stops 2017\n"
        "(posterior mean, 50% and 94% intervals)"
    )
    figure.savefig(path, dpi=120, bbox_inches="tight")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
