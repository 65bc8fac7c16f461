"""Records larger than memory: the one-pass statistics of ``pymc_dp.Data`` on Parquet.

Data: ``--records`` synthetic records (default 10⁸) written once to Parquet under ``--dir``
(files of 5·10⁶ rows; columns ``region`` int8 in 0..4, ``searched`` int8 0/1, ``minutes``
float32 in [0, 120]), and one smaller data set per n in 10⁴, 10⁵, … below it. Model: a
grouped Beta–Bernoulli (``searched`` by ``region``) and a Normal with unknown mean and sd
(``minutes``, ``data_bounds`` (0, 120)), both read through ``pymc_dp.Data`` from one Dask
DataFrame (so one read of each partition serves both), Dask's local threaded scheduler on
this machine's cores.

Part 1, throughput and memory. Each measurement runs in a fresh subprocess, which reports
its own wall time and peak resident memory (``ru_maxrss``; Python, PyMC and Dask included):

* the pymc_dp pass (``recognise``: validation and exact statistics of both likelihoods) over
  all ``--records`` records: records per second, peak memory (target ≤ 2 GB at 10⁸);
  the fastest of 2 runs;
* the baseline, plain pandas on the part that fits in memory (one file, 5·10⁶ records): read
  the two likelihoods' columns and group-by (count and sum of ``searched`` per region; count,
  Σ, Σ² of ``minutes``), records per second, and the same group-by alone on data already in
  memory; the fastest of 3 runs.

Printed: the ratio of pymc_dp's records per second to each baseline's (same process tree,
same machine, same run).

Part 2, ``pymc_dp.sample`` against n: the whole call (pass, release, private model,
compilation, 1 chain of ``--draws`` draws after ``--tune``) for n = 10⁴ … ``--records``, and
its sampling part (the whole call less the pass, timed by wrapping
``pymc_dp.records.summarise``), in wall and in CPU seconds (the CPU time is less disturbed by
other work on the machine). The sampling part should be flat in n: the sampler reads only
the released statistics. Printed: each n's times and their ratio to n = 10⁴.

Run: python benchmarks/dask_statistics.py [--records 1e8] [--dir /tmp/pymc_dp_bench]
     [--draws 1000] [--tune 500]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FILE_ROWS = 5_000_000
REGIONS = 5
BOUNDS = {"minutes": (0.0, 120.0)}
REPEATS = {"pass": 2, "pandas": 3}  # part 1 reports the fastest of these runs


def write_records(path: Path, n: int, seed: int = 0) -> None:
    """n synthetic records as Parquet files of at most FILE_ROWS rows (skipped if present)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if (path / "_done").exists():
        return
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rates = np.linspace(0.05, 0.4, REGIONS)
    for i, start in enumerate(range(0, n, FILE_ROWS)):
        rows = min(FILE_ROWS, n - start)
        region = rng.integers(0, REGIONS, rows).astype(np.int8)
        searched = (rng.random(rows) < rates[region]).astype(np.int8)
        minutes = np.clip(rng.gamma(2.0, 10.0, rows), 0, 120).astype(np.float32)
        table = pa.table({"region": region, "searched": searched, "minutes": minutes})
        pq.write_table(table, path / f"part-{i:04d}.parquet")
    (path / "_done").touch()


def model(path: Path, normal: bool = True):
    import dask.dataframe as dd
    import pymc as pm

    import pymc_dp

    frame = dd.read_parquet(str(path / "part-*.parquet"))
    with pm.Model(coords={"region": [f"r{k}" for k in range(REGIONS)]}) as m:
        region = pymc_dp.Data("region_records", frame, column="region")
        rate = pm.Beta("rate", 1, 1, dims="region")
        pm.Bernoulli(
            "searched",
            p=rate[region],
            observed=pymc_dp.Data("searched_records", frame, column="searched"),
        )
        if normal:
            mu, sigma = pm.Normal("mu", 30, 30), pm.HalfNormal("sigma", 30)
            minutes = pymc_dp.Data("minutes_records", frame, column="minutes")
            pm.Normal("minutes", mu, sigma, observed=minutes)
    return m


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def child(task: str, path: Path, draws: int, tune: int) -> dict:
    """One measurement, in this (fresh) process."""
    if task == "pass":
        from pymc_dp.analysis import recognise

        m = model(path)
        times = []
        for _ in range(REPEATS["pass"]):
            start = time.perf_counter()
            links = recognise(m, "laplace", data_bounds=BOUNDS).blocks
            times.append(time.perf_counter() - start)
        n = links["searched"].summary.n_records
        return {"seconds": min(times), "records": n, "peak_mb": _peak_mb()}
    if task in ("pandas", "groupby"):
        import pandas as pd

        file = sorted(path.glob("part-*.parquet"))[0]
        times = []
        for _ in range(REPEATS["pandas"]):
            start = time.perf_counter()
            frame = pd.read_parquet(file, columns=["region", "searched", "minutes"])
            if task == "groupby":
                start = time.perf_counter()
            frame["minutes2"] = frame["minutes"].astype(np.float64) ** 2
            summary = frame.groupby("region").agg(
                n=("searched", "size"),
                searched=("searched", "sum"),
                minutes=("minutes", "sum"),
                minutes2=("minutes2", "sum"),
            )
            times.append(time.perf_counter() - start)
            assert int(summary["n"].sum()) == len(frame)
        return {"seconds": min(times), "records": len(frame), "peak_mb": _peak_mb()}
    if task in ("sample", "sample-bernoulli"):
        import pymc_dp
        from pymc_dp.analysis import conjugate

        timed = {"pass": 0.0, "pass_cpu": 0.0}
        summarise = conjugate.summarise

        def timed_summarise(*args, **kwargs):
            begin, begin_cpu = time.perf_counter(), time.process_time()
            try:
                return summarise(*args, **kwargs)
            finally:
                timed["pass"] += time.perf_counter() - begin
                timed["pass_cpu"] += time.process_time() - begin_cpu

        conjugate.summarise = timed_summarise
        m = model(path, normal=task == "sample")
        start, start_cpu = time.perf_counter(), time.process_time()
        idata = pymc_dp.sample(
            draws,
            tune=tune,
            chains=1,
            model=m,
            epsilon=1.0,
            data_bounds=BOUNDS if task == "sample" else None,
            progressbar=False,
            compute_convergence_checks=False,
            random_seed=1,
        )
        total, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        return {
            "seconds": total,
            "pass": timed["pass"],
            "sampling_cpu": cpu - timed["pass_cpu"],
            "tree_depth": float(idata["sample_stats"]["tree_depth"].mean())
            if "tree_depth" in idata["sample_stats"]
            else None,
            "peak_mb": _peak_mb(),
        }
    raise ValueError(task)


def run(task: str, path: Path, args) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", task, "--dir", str(path), "--draws",
         str(args.draws), "--tune", str(args.tune)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=float, default=1e8)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pymc_dp_bench"))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.dir, args.draws, args.tune)))
        return
    n_max = int(args.records)
    sizes = [10**k for k in range(4, 10) if 10**k < n_max] + [n_max]
    print(f"writing Parquet under {args.dir} (skipped where present) ...", flush=True)
    for n in sizes:
        write_records(args.dir / f"n{n}", n)
    big = args.dir / f"n{n_max}"

    print(f"\nPart 1: the statistics pass over {n_max:,} records ({os.cpu_count()} cores)")
    ours = run("pass", big, args)
    rate = ours["records"] / ours["seconds"]
    print(
        f"  pymc_dp pass (read, validate, exact statistics of 2 likelihoods): "
        f"{ours['seconds']:.1f} s, {rate / 1e6:.1f} M records/s, peak {ours['peak_mb']:.0f} MB "
        f"({'within' if ours['peak_mb'] <= 2048 else 'ABOVE'} the 2 GB target)"
    )
    for task, what in (
        ("pandas", "pandas read + group-by, one file in memory"),
        ("groupby", "pandas group-by alone, data already in memory"),
    ):
        base = run(task, big, args)
        base_rate = base["records"] / base["seconds"]
        print(
            f"  baseline, {what} ({base['records']:,} records): {base_rate / 1e6:.1f} M "
            f"records/s, peak {base['peak_mb']:.0f} MB; ratio pymc_dp / baseline = "
            f"{rate / base_rate:.2f}"
        )

    for task, what in (
        ("sample-bernoulli", "the grouped Beta-Bernoulli alone (conjugate Gibbs)"),
        ("sample", "both likelihoods (Gibbs + NUTS on the noise-aware Normal)"),
    ):
        print(
            f"\nPart 2: pymc_dp.sample on {what}, 1 chain × {args.draws} draws after "
            f"{args.tune} tuning"
        )
        first = None
        for n in sizes:
            result = run(task, args.dir / f"n{n}", args)
            sampling = result["seconds"] - result["pass"]
            first = first or (result["seconds"], sampling, result["sampling_cpu"])
            depth = result["tree_depth"]
            print(
                f"  n = {n:>11,}: total {result['seconds']:6.1f} s (ratio to n = {sizes[0]:,}: "
                f"{result['seconds'] / first[0]:5.2f}), pass {result['pass']:5.1f} s, sampling "
                f"part {sampling:5.1f} s wall (ratio {sampling / first[1]:4.2f}), "
                f"{result['sampling_cpu']:5.1f} s CPU "
                f"(ratio {result['sampling_cpu'] / first[2]:4.2f})"
                + (f", NUTS tree depth {depth:.1f}" if depth is not None else "")
                + f", peak {result['peak_mb']:.0f} MB"
            )


if __name__ == "__main__":
    main()
