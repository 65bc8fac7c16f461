"""Compile once: a second ``pymc_dp.sample`` on a model of the same structure vs ``pm.sample``.

For the noise-aware Normal and linear-regression models of the calibration study
(:data:`pymc_dp.calibration.bounded.CASES`) at n = 1,000 records (fixed seed), ε = 1:

* ``pm.sample`` on the user's model given the raw records, first and second call;
* ``pymc_dp.sample`` (default inference, noise-aware), first and second call, each on a newly
  written model of the same structure (what a user re-running a script cell does); every
  call releases afresh and is charged; with PyMC's NUTS and, when installed, with
  ``nuts_sampler="blackjax"`` (:mod:`pymc_dp.routes.blackjax_nuts`) and
  ``nuts_sampler="nutpie"`` (:mod:`pymc_dp.routes.nutpie_nuts`), each compiled once per
  structure (``--samplers`` picks some);
* the ratio of each ``pymc_dp.sample``'s second call to ``pm.sample``'s second call (target
  ≤ 1.5);
* divergences per 1,000 draws and leapfrog steps per draw (``sample_stats.n_steps``) of every
  call, and the machine's load (``os.getloadavg``), which inflates every time printed.

Every call: ``--draws`` draws, ``--tune`` tuning steps, ``--chains`` chains on one core, no
progress bar, no convergence checks. Times are wall seconds of the whole call (analysis,
release, private model, compilation, sampling, conversion).

Run: python benchmarks/compile_once.py [--draws 1000] [--tune 1000] [--chains 2] [--n 1000]
     [--samplers pymc blackjax nutpie]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pymc as pm

import pymc_dp
from pymc_dp.calibration.bounded import CASES
from pymc_dp.routes.blackjax_nuts import blackjax_installed
from pymc_dp.routes.nutpie_nuts import nutpie_installed


def _stats(idata) -> tuple[float, float]:
    """(divergences per 1,000 draws, mean leapfrog steps per draw)."""
    stats = idata["sample_stats"]
    draws = stats["diverging"].size
    return 1000.0 * float(stats["diverging"].sum()) / draws, float(stats["n_steps"].mean())


def _timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def run_case(
    family: str, n: int, epsilon: float, options: dict, seed: int, samplers: list[str]
) -> dict:
    case = CASES[family]
    _, y, X = case.simulate(n, np.random.default_rng(seed))
    row: dict = {}
    for call in ("first", "second"):
        model = case.model(y, X)
        row[f"pm {call}"], idata = _timed(
            lambda model=model: pm.sample(model=model, random_seed=seed, **options)
        )
        row[f"pm {call} stats"] = _stats(idata)
    for sampler in samplers:
        for call in ("first", "second"):
            model = case.model(y, X)  # a new model of the same structure
            with model:
                row[f"{sampler} {call}"], idata = _timed(
                    lambda sampler=sampler: pymc_dp.sample(
                        epsilon=epsilon,
                        data_bounds=case.data_bounds,
                        random_seed=seed,
                        noise_backend="numpy",
                        noise_rng=np.random.default_rng(seed + 1),
                        nuts_sampler=sampler,
                        **options,
                    )
                )
            row[f"{sampler} {call} stats"] = _stats(idata)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--families", nargs="+", default=["normal", "linear-regression"])
    parser.add_argument(
        "--samplers",
        nargs="+",
        choices=("pymc", "blackjax", "nutpie"),
        default=None,
        help="pymc_dp.sample's nuts_sampler values to time (default: every one installed)",
    )
    args = parser.parse_args()
    options = dict(
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=1,
        progressbar=False,
        compute_convergence_checks=False,
    )
    print(f"load average before: {os.getloadavg()}")
    print(
        f"n = {args.n}, ε = {args.epsilon:g}, {args.chains} chains × {args.draws} draws "
        f"(+ {args.tune} tune), 1 core; seconds, (divergences per 1,000 draws, steps per draw)"
    )
    installed = {"pymc": True, "blackjax": blackjax_installed(), "nutpie": nutpie_installed()}
    samplers = [s for s in (args.samplers or installed) if installed[s]]
    labels = {
        "pm": "pm.sample                           ",
        "pymc": "pymc_dp.sample                      ",
        "blackjax": "pymc_dp.sample(nuts_sampler=blackjax)",
        "nutpie": "pymc_dp.sample(nuts_sampler=nutpie)  ",
    }
    for family in args.families:
        row = run_case(family, args.n, args.epsilon, options, args.seed, samplers)
        print(f"\n{family}")
        for who in ("pm", *samplers):
            for call in ("first", "second"):
                divergences, steps = row[f"{who} {call} stats"]
                print(
                    f"  {labels[who]} {call:>6}: {row[f'{who} {call}']:6.2f} s   "
                    f"divergences/1000 {divergences:6.1f}   steps/draw {steps:6.1f}"
                )
        for sampler in samplers:
            ratio = row[f"{sampler} second"] / row["pm second"]
            print(
                f"  ratio {labels[sampler].strip()} second / pm.sample second: {ratio:.2f} "
                "(target <= 1.5)"
            )
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
