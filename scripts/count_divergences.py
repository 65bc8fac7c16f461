"""Divergences per 1,000 draws of the noise-aware Normal and regression models, study designs.

    python scripts/count_divergences.py                          # n ∈ {10³, 10⁴}, ε ∈ {0.1, 1}
    python scripts/count_divergences.py --seeds 5 --draws 1000 --families normal
    python scripts/count_divergences.py --target-accept 0.8     # PyMC's default, not the family's
    python scripts/count_divergences.py --nuts-sampler blackjax  # BlackJAX's NUTS, compiled once
    python scripts/count_divergences.py --nuts-sampler nutpie    # nutpie (the package default)

For every family, n and ε of the calibration study (:data:`pymc_dp.calibration.bounded.CASES`,
replace-one neighbours, ``data_bounds`` as there) and every seed: simulates a data set with the
parameters drawn from the prior, runs ``pymc_dp.sample`` on it (default inference,
noise-aware; the sampler options ``pymc_dp.sample`` picks, e.g. the family's
``target_accept``) and counts divergent transitions (``sample_stats.diverging``) and leapfrog
steps per draw (``sample_stats.n_steps``). Prints one line per cell: divergences per 1,000
draws (mean and per seed), steps per draw, and where the divergent draws sit: the median over
divergent draws of each latent noise variance V relative to its prior mean 2b² (and the
same over all draws; NaN for a model without latent variances, the Normal's), and the quantile
of σ among all draws.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import pymc_dp
from pymc_dp.calibration.bounded import CASES
from pymc_dp.families import BOUNDED_FAMILIES

STUDY_N = (1_000, 10_000)
STUDY_EPSILON = (0.1, 1.0)


def one_run(
    family: str,
    n: int,
    epsilon: float,
    seed: int,
    draws: int,
    tune: int,
    target_accept: float | None = None,
    nuts_sampler: str = "pymc",
    init: str | None = None,
) -> dict:
    """Divergences, steps and the divergent draws' region of one data set."""
    case = CASES[family]
    rng = np.random.default_rng(seed)
    _, y, X = case.simulate(n, rng)
    with case.model(y, X):
        idata = pymc_dp.sample(
            draws,
            tune=tune,
            chains=1,
            cores=1,
            epsilon=epsilon,
            data_bounds=case.data_bounds,
            clamp_to_bounds=list(case.data_bounds),
            random_seed=seed,
            noise_backend="numpy",
            noise_rng=rng,
            progressbar=False,
            compute_convergence_checks=False,
            nuts_sampler=nuts_sampler,
            **({} if target_accept is None else {"target_accept": target_accept}),
            **({} if init is None else {"init": init}),
        )
    stats = idata["sample_stats"]
    diverging = stats["diverging"].values.reshape(-1).astype(bool)
    posterior = idata["posterior"]
    scale = float(idata["released_statistics"]["y_obs"].attrs["noise_scale"])
    if "y_obs_noise_variance" in posterior:  # latent variances (the regression)
        variance = posterior["y_obs_noise_variance"].values.reshape(diverging.size, -1)
    else:  # the Normal's exact marginal has none
        variance = np.full((diverging.size, 1), np.nan)
    relative = variance / (2.0 * scale**2)
    sigma = posterior["sigma"].values.reshape(-1)
    sigma_rank = np.searchsorted(np.sort(sigma), sigma[diverging]) / sigma.size
    return {
        "divergences": 1000.0 * diverging.sum() / diverging.size,
        "steps": float(stats["n_steps"].mean()),
        "v_divergent": np.median(relative[diverging], axis=0) if diverging.any() else None,
        "v_all": np.median(relative, axis=0),
        "sigma_quantile": float(np.median(sigma_rank)) if diverging.any() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["normal", "linear-regression"])
    parser.add_argument("--ns", nargs="+", type=int, default=list(STUDY_N))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(STUDY_EPSILON))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument(
        "--target-accept", type=float, default=None, help="default: the family's own"
    )
    parser.add_argument(
        "--nuts-sampler", default="pymc", choices=["pymc", "blackjax", "nutpie"]
    )
    parser.add_argument("--init", default=None, help="pm.sample's init (default: the family's)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    for family in args.families:
        target = args.target_accept or BOUNDED_FAMILIES[family].noise_aware_sampler.get(
            "target_accept", 0.8
        )
        print(f"\n{family} (target_accept {target}; 1 chain × {args.draws} draws per seed)")
        for n in args.ns:
            for epsilon in args.epsilons:
                start = time.perf_counter()
                runs = [
                    one_run(
                        family,
                        n,
                        epsilon,
                        seed,
                        args.draws,
                        args.tune,
                        args.target_accept,
                        args.nuts_sampler,
                        args.init,
                    )
                    for seed in range(args.seeds)
                ]
                per_seed = " ".join(f"{r['divergences']:.0f}" for r in runs)
                divergent = [r for r in runs if r["v_divergent"] is not None]
                where = ""
                if divergent:
                    v_div = np.median([r["v_divergent"] for r in divergent], axis=0)
                    v_all = np.median([r["v_all"] for r in runs], axis=0)
                    quantile = np.median([r["sigma_quantile"] for r in divergent])
                    where = (
                        f"  V/2b² divergent {np.round(v_div, 2)} vs all {np.round(v_all, 2)};"
                        f" σ quantile {quantile:.2f}"
                    )
                print(
                    f"  n={n:>6} ε={epsilon:<4g} divergences/1000 "
                    f"{np.mean([r['divergences'] for r in runs]):6.1f} (seeds: {per_seed})"
                    f"  steps/draw {np.mean([r['steps'] for r in runs]):5.1f}"
                    f"  ({time.perf_counter() - start:.0f} s){where}",
                    flush=True,
                )
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
