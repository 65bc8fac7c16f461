"""Held-out evaluation of the private naive-Bayes HMM on the Minneapolis stops (Foulds Fig. 6/9).

    python scripts/evaluate_hmm.py                # both region sets, 5 splits, 2 processes
    python scripts/evaluate_hmm.py --splits 1 --regions precinct --epsilons 1 --states 2
    python scripts/evaluate_hmm.py --regions neighborhood --methods non-private laplace \
        --inference plugin noise-aware --tag noise_aware   # plug-in vs noise-aware, no OPS

For each region set (5 precincts: median 196 stops per cell; 87 neighbourhoods: median 6),
5 train/test splits hold out 10% of the region × week cells. Every split is fitted
non-privately, with Laplace counts and with OPS (M = 10 and 100) for ε ∈ {0.1, 0.3, 1, 3, 10}
and K ∈ {1, 2, 3, 10} (200 sweeps, 100 burn-in; see :mod:`pymc_dp.hmm.evaluation`). Writes
``hmm_heldout.csv`` (one row per fit), ``hmm_heldout_summary.csv``, ``hmm_trends.csv`` and
``hmm_heldout.png`` to ``--output-dir`` and prints the summary and the trend checks.

``--inference noise-aware`` adds a noise-aware fit (:mod:`pymc_dp.hmm.noise_aware`) on the
release of every plug-in Laplace fit; ``--methods`` picks the methods to run (the seeds do
not change); ``--tag T`` names the outputs ``hmm_heldout_T.csv``, ``hmm_heldout_T_summary.csv``,
``hmm_trends_T.csv`` (with OPS), ``hmm_heldout_T_comparison.csv`` (with both inferences) and
``hmm_heldout_T.png``, so earlier results are kept.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from pymc_dp.datasets import load_mpls_stops
from pymc_dp.hmm.evaluation import (
    INFERENCES,
    METHOD_FAMILIES,
    evaluate,
    inference_comparison,
    summarise,
    trend_checks,
)
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
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHOD_FAMILIES,
        default=list(METHOD_FAMILIES),
        help="methods to fit (default all; 'laplace' and 'laplace (sum clamp)' are plug-in)",
    )
    parser.add_argument(
        "--inference",
        nargs="+",
        choices=INFERENCES,
        default=["plugin"],
        help="how Laplace fits read the release (noise-aware: on the release of 'laplace')",
    )
    parser.add_argument("--output-dir", type=Path, default=Path("docs/results"))
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    parser.add_argument(
        "--from-csv",
        action="store_true",
        help="redo the summary, trends and figure from OUTPUT_DIR/hmm_heldout[_TAG].csv",
    )
    args = parser.parse_args()
    if args.from_csv:
        report(pd.read_csv(args.output_dir / f"{_stem(args)}.csv"), args)
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
            methods=args.methods,
            inferences=args.inference,
        )
        frames.append(results.assign(regions=regions))
        print(f"{regions}: {len(results)} fits in {time.perf_counter() - start:.0f} s")
    report(pd.concat(frames, ignore_index=True), args)


def _stem(args: argparse.Namespace) -> str:
    return "hmm_heldout" + (f"_{args.tag}" if args.tag else "")


def report(results: pd.DataFrame, args: argparse.Namespace) -> None:
    """Write the per-fit results, summary, trend checks and figure; print the tables."""
    stem, suffix = _stem(args), f"_{args.tag}" if args.tag else ""
    summary = summarise(results)
    trends = trend_checks(results)
    comparison = inference_comparison(results)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    written = [f"{stem}.csv", f"{stem}_summary.csv", f"{stem}.png"]
    results.to_csv(args.output_dir / written[0], index=False)
    summary.to_csv(args.output_dir / written[1], index=False)
    if not trends.empty:
        written.append(f"hmm_trends{suffix}.csv")
        trends.to_csv(args.output_dir / written[-1], index=False)
    if not comparison.empty:
        written.append(f"{stem}_comparison.csv")
        comparison.to_csv(args.output_dir / written[-1], index=False)
    plot_heldout(
        summary,
        args.output_dir / written[2],
        f"Held-out log-likelihood, Minneapolis stops 2017 "
        f"({results['split'].nunique()} splits, 10% of cells"
        + (
            "; sum-clamp points below a panel are off-scale)"
            if "laplace (sum clamp)" in set(results["method"])
            else "; 'laplace' reads the release as exact)"
        ),
    )
    with pd.option_context("display.width", 140, "display.float_format", "{:.3f}".format):
        print(summary.to_string(index=False))
        if not trends.empty:
            print("\nLaplace minus best OPS (> 0: Laplace better); occupied states of K:")
            print(trends.to_string(index=False))
        if not comparison.empty:
            print("\nNoise-aware minus plug-in Laplace (> 0: noise-aware better), paired:")
            print(comparison.to_string(index=False))
    print(f"\nWrote {', '.join(written)} to {args.output_dir}")


if __name__ == "__main__":
    main()
