"""Coverage and width of private posterior intervals: plug-in, noise-aware and non-private.

    python scripts/evaluate_calibration.py                      # every family, 500 data sets
    python scripts/evaluate_calibration.py --families beta-bernoulli --n-datasets 2000
    python scripts/evaluate_calibration.py --from-csv           # redraw the figure only

For every family, n ∈ {10, 100, 1000, 10⁴} and ε ∈ {0.1, 1}, simulates data sets with the
parameters drawn from the prior, releases their statistics as ``pymc_dp.sample`` does on the
Laplace route (replace-one neighbours) and scores the central 90% interval of each method
(:mod:`pymc_dp.calibration`). Writes ``calibration.csv`` and ``calibration.png`` to
``--output-dir`` (default ``docs/results``) and prints the coverage table, flagging
noise-aware cells outside the target band 0.88–0.92.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from pymc_dp.calibration import CELLS_EPSILON, CELLS_N, FAMILIES_STUDIED, TARGET, coverage_table
from pymc_dp.calibration.bounded import SAMPLERS
from pymc_dp.calibration.plots import plot_calibration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES_STUDIED))
    parser.add_argument("--ns", nargs="+", type=int, default=list(CELLS_N))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(CELLS_EPSILON))
    parser.add_argument("--n-datasets", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--output-dir", type=Path, default=Path("docs/results"))
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default=None,
        help="NUTS of the bounded families (default: jax when installed, else pymc)",
    )
    parser.add_argument(
        "--partial", action="store_true", help="write finished cells to partial.csv as they end"
    )
    parser.add_argument("--from-csv", action="store_true", help="only redraw from the CSV")
    args = parser.parse_args()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    csv = args.output_dir / "calibration.csv"
    if args.from_csv:
        table = pd.read_csv(csv)
    else:
        start = time.perf_counter()
        parts = []
        for family in args.families:
            for n in args.ns:
                for epsilon in args.epsilons:
                    part = coverage_table(
                        [family],
                        ns=[n],
                        epsilons=[epsilon],
                        n_datasets=args.n_datasets,
                        seed=args.seed,
                        sampler=args.sampler,
                    )
                    cell = ", ".join(
                        f"{r.parameter} {r.method} {r.coverage:.3f}" for r in part.itertuples()
                    )
                    elapsed = time.perf_counter() - start
                    print(f"{family} n={n} ε={epsilon:g} ({elapsed:.0f} s): {cell}", flush=True)
                    parts.append(part)
                    if args.partial:  # keep every finished cell on disk
                        pd.concat(parts).to_csv(args.output_dir / "partial.csv", index=False)
        table = pd.concat(parts, ignore_index=True)
        if csv.exists():  # keep the families not rerun
            old = pd.read_csv(csv)
            table = pd.concat([old[~old["family"].isin(args.families)], table], ignore_index=True)
        table.to_csv(csv, index=False)
    plot_calibration(table, args.output_dir / "calibration.png")
    wide = table.pivot_table(
        index=["family", "parameter", "n", "epsilon"],
        columns="method",
        values=["coverage", "mean_width"],
    )
    with pd.option_context(
        "display.width", 200, "display.max_rows", 200, "display.max_columns", 20
    ):
        print(wide.round(3))
    aware = table[table["method"] == "noise-aware"]
    outside = aware[(aware["coverage"] < TARGET[0]) | (aware["coverage"] > TARGET[1])]
    print(
        f"noise-aware cells outside {TARGET}: {len(outside)} of {len(aware)}"
        + ("" if outside.empty else "\n" + outside.to_string(index=False))
    )


if __name__ == "__main__":
    main()
