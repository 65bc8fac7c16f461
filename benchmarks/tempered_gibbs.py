"""ESS per second of the tempered posterior: TemperedConjugateGibbs vs NUTS, and the step's
overhead over a NumPy loop, all in one process.

Model: person-search rate by race on the bundled Minneapolis stops (51,920 records, 9
groups), priors TruncatedBeta(1, 1, a0 = 0.01), a hierarchical mean m ~ Beta(2, 2) and
concentration κ ~ Gamma(2, 0.1) feeding the Beta. Target: the joint tempered at T = 50.

* ``tempered Gibbs``: ``pm.sample`` with TemperedConjugateGibbs on the rates and NUTS on (m, κ)
  of the data-free tempered model — what ``pymc_dp.sample(mechanism="gibbs-exponential")``
  runs.
* ``NUTS``: ``pm.sample`` with NUTS on everything, on the model tempered by
  ``pymc_dp.tempering.temper`` (non-private reference: it reads the raw data).
* ``NumPy floor``: the same exact rate updates (``tempered_draw``) in a plain loop, hyperpriors
  fixed: the cost of the draws themselves.

Printed: wall and sampling time, minimum bulk ESS over the rates, ESS/s and the ratios
tempered Gibbs / NUTS (ESS/s) and step time / NumPy floor (per draw), with the largest
difference of posterior means as a sanity check.

Run: python benchmarks/tempered_gibbs.py [--draws 1000] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm

from pymc_dp.analysis.rewrite import data_free_model
from pymc_dp.analysis.tempered import analyse_tempered_model
from pymc_dp.datasets import MPLS_STOPS_CATEGORIES, load_mpls_stops
from pymc_dp.families.tempered import tempered_draw
from pymc_dp.steps.guard import route_context
from pymc_dp.steps.tempered_gibbs import TemperedConjugateGibbs
from pymc_dp.tempering import temper

TEMPERATURE = 50.0


def build_model() -> pm.Model:
    stops = load_mpls_stops()
    recorded = stops[stops["personSearch"] != "Missing"]
    races = list(MPLS_STOPS_CATEGORIES["race"])
    race = pd.Categorical(recorded["race"], categories=races).codes.astype(np.int64)
    searched = (recorded["personSearch"] == "YES").to_numpy(np.int64)
    with pm.Model(coords={"race": races}) as model:
        m = pm.Beta("m", 2.0, 2.0)
        kappa = pm.Gamma("kappa", 2.0, 0.1)
        rate = pm.Truncated(
            "rate", pm.Beta.dist(kappa * m, kappa * (1 - m)), lower=0.01, upper=0.99, dims="race"
        )
        pm.Bernoulli("searched", p=rate[race], observed=searched)
    return model


def run(name: str, model: pm.Model, draws: int) -> dict:
    kwargs = {"tune": draws, "chains": 2, "cores": 1, "random_seed": 1, "progressbar": False}
    start = time.perf_counter()
    if name == "tempered Gibbs":
        analysis = analyse_tempered_model(model)
        # built as the tempered route builds it (pymc_dp.steps.guard): a speed measurement
        with temper(data_free_model(model), TEMPERATURE, part="joint"), route_context():
            step = TemperedConjugateGibbs(temperature=TEMPERATURE, analysis=analysis)
            idata = pm.sample(draws, step=[step], **kwargs)
    else:
        with temper(model, TEMPERATURE, part="joint"):
            idata = pm.sample(draws, **kwargs)
    wall = time.perf_counter() - start
    ess = az.ess(idata, var_names=["rate"])["rate"].to_numpy()
    return {
        "wall": wall,
        "sampling": float(idata.posterior.attrs.get("sampling_time", np.nan)),
        "ess": float(ess.min()),
        "mean": idata.posterior["rate"].mean(("chain", "draw")).to_numpy(),
        "draws": 2 * 2 * draws,
    }


def numpy_floor(model: pm.Model, n_draws: int) -> float:
    """Seconds per draw of the rate block's exact tempered update in a plain loop."""
    (block,) = analyse_tempered_model(model).blocks
    statistics, rng = block.statistics, np.random.default_rng(0)
    prior = (np.full(9, 2.0), np.full(9, 2.0))
    start = time.perf_counter()
    for _ in range(n_draws):
        tempered_draw("beta", prior, statistics, TEMPERATURE, (block.lower, block.upper), rng)
    return (time.perf_counter() - start) / n_draws


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 draws")
    args = parser.parse_args()
    draws = 200 if args.quick else args.draws
    model = build_model()
    run("tempered Gibbs", model, 20)  # warm-up: imports, caches
    results = {name: run(name, model, draws) for name in ("tempered Gibbs", "NUTS")}
    floor = numpy_floor(model, 2000)
    print(
        f"Stops search rate, 9 races + (m, κ), T = {TEMPERATURE:g}, 2 chains x "
        f"({draws} tune + {draws} draws)"
    )
    print(
        f"{'sampler':<16}{'wall s':>9}{'sampling s':>12}{'min ESS':>9}{'ESS/s wall':>12}"
        f"{'ESS/s samp':>12}"
    )
    for name, r in results.items():
        print(
            f"{name:<16}{r['wall']:>9.2f}{r['sampling']:>12.2f}{r['ess']:>9.0f}"
            f"{r['ess'] / r['wall']:>12.0f}{r['ess'] / r['sampling']:>12.0f}"
        )
    g, n = results["tempered Gibbs"], results["NUTS"]
    wall = (g["ess"] / g["wall"]) / (n["ess"] / n["wall"])
    sampling = (g["ess"] / g["sampling"]) / (n["ess"] / n["sampling"])
    print(
        f"ratio tempered Gibbs / NUTS ESS per second: {wall:.1f}x (wall), "
        f"{sampling:.1f}x (sampling only)"
    )
    per_draw = g["sampling"] / g["draws"]
    print(
        f"tempered Gibbs per draw (rates by the step, (m, κ) by NUTS): {per_draw * 1e3:.2f} ms; "
        f"NumPy floor of the rate update: {floor * 1e3:.3f} ms ({per_draw / floor:.1f}x)"
    )
    diff = float(np.abs(g["mean"] - n["mean"]).max())
    print(f"max |posterior mean difference| = {diff:.3f}")
    if not (np.isfinite(g["ess"]) and np.isfinite(n["ess"])) or diff > 0.05:
        print("sanity check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
