"""Held-out evaluation of the private naive-Bayes HMM on the Minneapolis stops (Foulds Fig. 6/9).

    python scripts/evaluate_hmm.py                # both region sets, 5 splits, 2 processes
    python scripts/evaluate_hmm.py --splits 1 --regions precinct --epsilons 1 --states 2

For each region set (5 precincts: median 196 stops per cell; 87 neighbourhoods: median 6),
5 train/test splits hold out 10% of the region × week cells. Every split is fitted
non-privately, with Laplace counts and with OPS (M = 10 and 100) for ε ∈ {0.1, 0.3, 1, 3, 10}
and K ∈ {1, 2, 3, 10} (200 sweeps, 100 burn-in; see :mod:`pymc_dp.hmm.evaluation`). Writes
``hmm_heldout.csv`` (one row per fit), ``hmm_heldout_summary.csv``, ``hmm_trends.csv`` and
``hmm_heldout.png`` to ``--output-dir`` and prints the summary and the trend checks.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from pymc_dp.datasets import load_mpls_stops
from pymc_dp.hmm.evaluation import evaluate, summarise, trend_checks
from pymc_dp.hmm.plots import plot_heldout
from pymc_dp.stops import stops_cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", nargs="+", default=["precinct", "neighborhood"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 0.3, 1, 3, 10])
    parser.add_argument("--states", nargs="+", type=int, default=[1, 2, 3, 10])
    parser.add_argument("--truncations", nargs="+", type=float, default=[10, 100])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--output-dir", type=Path, default=Path("docs/results"))
    parser.add_argument(
        "--from-csv",
        action="store_true",
        help="redo the summary, trends and figure from OUTPUT_DIR/hmm_heldout.csv (no fits)",
    )
    args = parser.parse_args()
    if args.from_csv:
        report(pd.read_csv(args.output_dir / "hmm_heldout.csv"), args)
        return
    stops = load_mpls_stops()
    frames = []
    for regions in args.regions:
        start = time.perf_counter()
        results = evaluate(
            stops_cells(stops, regions),
            epsilons=args.epsilons,
            n_states=args.states,
            truncations=args.truncations,
            n_splits=args.splits,
            seed=args.seed,
            processes=args.processes,
        )
        frames.append(results.assign(regions=regions))
        print(f"{regions}: {len(results)} fits in {time.perf_counter() - start:.0f} s")
    report(pd.concat(frames, ignore_index=True), args)


def report(results: pd.DataFrame, args: argparse.Namespace) -> None:
    """Write the per-fit results, summary, trend checks and figure; print the tables."""
    summary = summarise(results)
    trends = trend_checks(results)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    results.to_csv(args.output_dir / "hmm_heldout.csv", index=False)
    summary.to_csv(args.output_dir / "hmm_heldout_summary.csv", index=False)
    trends.to_csv(args.output_dir / "hmm_trends.csv", index=False)
    plot_heldout(
        summary,
        args.output_dir / "hmm_heldout.png",
        f"Held-out log-likelihood, Minneapolis stops 2017 "
        f"({results['split'].nunique()} splits, 10% of cells; sum-clamp points below a panel "
        "are off-scale)",
    )
    with pd.option_context("display.width", 140, "display.float_format", "{:.3f}".format):
        print(summary.to_string(index=False))
        print("\nLaplace minus best OPS (> 0: Laplace better); occupied states of K:")
        print(trends.to_string(index=False))
    print(
        f"\nWrote hmm_heldout.csv, hmm_heldout_summary.csv, hmm_trends.csv and "
        f"hmm_heldout.png to {args.output_dir}"
    )


if __name__ == "__main__":
    main()
