"""Error against ε of the exponential-mechanism Gibbs routes, with basic vs tight accounting.

For each total ε in {0.1, 0.3, 1, 3, 10}, runs ``mechanism="gibbs-exponential"`` twice on the
same data: with the temperature of basic composition (the updates' ε add up to ε; pure ε-DP)
and with the lowest temperature whose updates compose to ε at δ = 1e-6 by the tightest valid
accounting (``accounting="tight"``; bounded-range composition of exponential mechanisms, Dong,
Durfee & Rogers 2020). Two models:

* ``poisson``: 200,000 Poisson(4) counts bounded to [0, 10], rate with a Gamma(2, 1) prior
  truncated to [0.5, 9]; 100 tuning + 400 kept sweeps. Error: |posterior mean − 4|.
* ``hmm``: a synthetic naive-Bayes HMM (4 regions × 25 times, K = 2 states, features with
  2, 3, 4 categories, 50,000 records; :func:`pymc_dp.hmm.simulate_records`), emissions
  truncated at a0_d = 1/(10·K_d); 50 tuning + 100 kept sweeps. Error: mean absolute error of
  the posterior-mean emission probabilities against the truth (best state labelling).

Each run is a ``pymc_dp.sample(..., accounting=...)`` call. Writes docs/results/tight_accounting.csv
(one row per run) and tight_accounting.png (mean error over seeds, ± one standard error).

Usage: ``python scripts/tight_accounting_gain.py [--seeds-poisson 5] [--seeds-hmm 3]``.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm

import pymc_dp
from pymc_dp.accounting import epsilon_at
from pymc_dp.hmm import simulate_records
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.models import naive_bayes_hmm

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
POISSON_RATE, POISSON_RECORDS, POISSON_BOUNDS = 4.0, 200_000, (0, 10)


def private_run(model, *, epsilon, accounting, seed, draws, tune, data_bounds=None):
    """One ``pymc_dp.sample(mechanism="gibbs-exponential", accounting=...)`` run."""
    ledger = PrivacyLedger()
    idata = pymc_dp.sample(
        draws,
        model=model,
        epsilon=epsilon,
        delta=DELTA if accounting == "tight" else 0.0,
        mechanism="gibbs-exponential",
        accounting=accounting,
        ledger=ledger,
        noise_rng=np.random.default_rng([seed, 99]),
        data_bounds=data_bounds,
        tune=tune,
        chains=1,
        cores=1,
        random_seed=seed,
        progressbar=False,
        compute_convergence_checks=False,
    )
    return idata, ledger


def poisson_model(seed):
    rng = np.random.default_rng([seed, 1])
    counts = rng.poisson(POISSON_RATE, POISSON_RECORDS).clip(*POISSON_BOUNDS)
    with pm.Model() as model:
        rate = pm.Truncated("rate", pm.Gamma.dist(2.0, 1.0), lower=0.5, upper=9.0)
        pm.Poisson("count", mu=rate, observed=counts)
    return model


def poisson_error(idata):
    return abs(float(idata["posterior"]["rate"].mean()) - POISSON_RATE)


def hmm_data(seed):
    return simulate_records(4, 25, 2, [2, 3, 4], 50_000, np.random.default_rng([seed, 2]))


def hmm_error(idata, truth):
    """Mean |posterior-mean emission − truth| over states, features and categories, for the
    labelling of the states that fits best (labels are arbitrary)."""
    n_features = truth.emission.shape[1]
    estimates = [
        idata["posterior"][f"emission_f{d}"].mean(("chain", "draw")).values
        for d in range(n_features)
    ]
    errors = []
    for order in itertools.permutations(range(truth.emission.shape[0])):
        total, count = 0.0, 0
        for d, estimate in enumerate(estimates):
            size = estimate.shape[-1]
            total += np.abs(estimate[list(order)] - truth.emission[:, d, :size]).sum()
            count += estimate.size
        errors.append(total / count)
    return min(errors)


def run(seeds_poisson: int, seeds_hmm: int) -> pd.DataFrame:
    rows = []
    jobs = [("poisson", s) for s in range(seeds_poisson)] + [("hmm", s) for s in range(seeds_hmm)]
    for (name, seed), epsilon, accounting in itertools.product(jobs, EPSILONS, ("basic", "tight")):
        start = time.perf_counter()
        if name == "poisson":
            idata, ledger = private_run(
                poisson_model(seed),
                epsilon=epsilon,
                accounting=accounting,
                seed=seed,
                draws=400,
                tune=100,
                data_bounds={"count": POISSON_BOUNDS},
            )
            error = poisson_error(idata)
        else:
            truth = hmm_data(seed)
            model = naive_bayes_hmm(truth.counts, 2, truncation=10)
            idata, ledger = private_run(
                model, epsilon=epsilon, accounting=accounting, seed=seed, draws=100, tune=50
            )
            error = hmm_error(idata, truth)
        composition = epsilon_at(ledger.events, DELTA)
        rows.append(
            {
                "model": name,
                "seed": seed,
                "epsilon": epsilon,
                "accounting": accounting,
                "temperature": ledger.events[0].temperature,
                "releases": sum(e.compositions for e in ledger.events),
                "basic_epsilon": ledger.epsilon,
                "epsilon_at_delta": composition.epsilon,
                "method_at_delta": composition.method,
                "error": error,
                "seconds": time.perf_counter() - start,
            }
        )
        print(
            f"{name} seed {seed} ε={epsilon:g} {accounting}: T={rows[-1]['temperature']:.4g} "
            f"ε(δ)={composition.epsilon:.4g} error={error:.4g} "
            f"({rows[-1]['seconds']:.1f}s)",
            flush=True,
        )
    return pd.DataFrame(rows)


def plot(frame: pd.DataFrame, path: Path) -> None:
    titles = {
        "poisson": "Poisson rate (200,000 records, 500 sweeps)\n|posterior mean − truth|",
        "hmm": "Naive-Bayes HMM (50,000 records, 150 sweeps)\nemission MAE",
    }
    models = [m for m in titles if m in set(frame["model"])]
    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 4.2), squeeze=False)
    styles = {
        "basic": ("tab:grey", "o", "basic: updates' ε add up to ε (ε, 0)"),
        "tight": ("tab:blue", "s", f"tight: composed to ε at δ = {DELTA:g}"),
    }
    for ax, name in zip(axes[0], models, strict=True):
        part = frame[frame["model"] == name]
        for accounting, (color, marker, label) in styles.items():
            rows = part[part["accounting"] == accounting].groupby("epsilon")["error"]
            mean, sem = rows.mean(), rows.sem().fillna(0.0)
            ax.errorbar(
                mean.index, mean.values, yerr=sem.values, color=color, marker=marker,
                label=label, capsize=3,
            )  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(EPSILONS, [f"{e:g}" for e in EPSILONS])
        ax.set_xlabel("total ε (same guarantee level for both)")
        ax.set_ylabel("error (mean over seeds ± s.e.)")
        ax.set_title(titles[name], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("mechanism='gibbs-exponential': basic vs tight accounting", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds-poisson", type=int, default=5)
    parser.add_argument("--seeds-hmm", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    RESULTS.mkdir(parents=True, exist_ok=True)
    frame = run(args.seeds_poisson, args.seeds_hmm)
    frame.to_csv(RESULTS / "tight_accounting.csv", index=False)
    plot(frame, RESULTS / "tight_accounting.png")
    summary = (
        frame.groupby(["model", "epsilon", "accounting"])
        .agg(temperature=("temperature", "mean"), error=("error", "mean"))
        .unstack("accounting")
    )
    print(summary.to_string())


if __name__ == "__main__":
    main()
