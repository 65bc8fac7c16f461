"""ESS per second: private conjugate Gibbs (pymc_dp.sample) vs NUTS (pm.sample), one process.

Model: Dirichlet–Categorical, K categories, n synthetic records (fixed seed), theta ~
Dirichlet(1), y ~ Categorical(theta). Both samplers run 2 chains × (draws + tune) on 1 core
in the same process; imports and one tiny warm-up run happen first so neither pays one-off
costs. Timed: the whole sampling call (model analysis, release, compilation, sampling,
conversion). ESS: minimum bulk ESS over the K components (arviz.ess). Printed: ESS/s of each
and the ratio private / NUTS (target ≥ 100×), also with PyMC's sampling-only time.

Run: python benchmarks/conjugate_vs_nuts.py [--n 100000 --k 8 --draws 1000] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_dp


def build_model(y: np.ndarray, k: int) -> pm.Model:
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", np.ones(k))
        pm.Categorical("y", p=theta, observed=y)
    return model


def run(name: str, model: pm.Model, draws: int, cores: int) -> dict:
    kwargs = {"tune": draws, "chains": 2, "cores": cores, "random_seed": 1, "progressbar": False}
    with model:
        start = time.perf_counter()
        if name == "private":
            idata = pymc_dp.sample(draws, epsilon=1.0, **kwargs)
        else:
            idata = pm.sample(draws, **kwargs)
        wall = time.perf_counter() - start
    ess = az.ess(idata, var_names=["theta"])["theta"].to_numpy()
    sampling = float(idata.posterior.attrs.get("sampling_time", np.nan))
    mean = idata.posterior["theta"].mean(("chain", "draw")).to_numpy()
    return {
        "wall": wall,
        "sampling": sampling,
        "ess": ess.min(),
        "ess_med": np.median(ess),
        "mean": mean,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="n=10^4, 200 draws")
    args = parser.parse_args()
    n, draws = (10_000, 200) if args.quick else (args.n, args.draws)
    rng = np.random.default_rng(0)
    probs = np.arange(1, args.k + 1) / np.arange(1, args.k + 1).sum()
    y = rng.choice(args.k, size=n, p=probs)
    run("private", build_model(y[:100], args.k), 20, 1)  # warm-up: imports, caches
    results = {
        name: run(name, build_model(y, args.k), draws, args.cores) for name in ("private", "nuts")
    }
    print(f"Dirichlet-Categorical K={args.k}, n={n:,}, 2 chains x ({draws} tune + {draws} draws)")
    print(
        f"{'sampler':<10}{'wall s':>9}{'sampling s':>12}{'min ESS':>9}{'med ESS':>9}"
        f"{'ESS/s wall':>12}{'ESS/s samp':>12}"
    )
    for name, r in results.items():
        print(
            f"{name:<10}{r['wall']:>9.2f}{r['sampling']:>12.2f}{r['ess']:>9.0f}"
            f"{r['ess_med']:>9.0f}{r['ess'] / r['wall']:>12.0f}{r['ess'] / r['sampling']:>12.0f}"
        )
    p, q = results["private"], results["nuts"]
    ratio_wall = (p["ess"] / p["wall"]) / (q["ess"] / q["wall"])
    ratio_sampling = (p["ess"] / p["sampling"]) / (q["ess"] / q["sampling"])
    diff = float(np.abs(p["mean"] - q["mean"]).max())
    print(
        f"ratio private/NUTS ESS per second: {ratio_wall:.0f}x (wall), "
        f"{ratio_sampling:.0f}x (sampling only); target >= 100x"
    )
    print(f"max |posterior mean difference| = {diff:.2e} (Laplace noise at eps=1 on n={n:,})")
    if not (np.isfinite(p["ess"]) and np.isfinite(q["ess"])) or diff > 0.01:
        print("sanity check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
