"""ESS per second: private conjugate Gibbs (pymc_dp.sample) vs NUTS (pm.sample), one process.

Model: Dirichlet–Categorical, K categories, n synthetic records (fixed seed), theta ~
Dirichlet(1), y ~ Categorical(theta). Three samplers run 2 chains × (draws + tune) on 1 core
in the same process: ``pymc_dp.sample`` with its default inference (noise-aware:
:class:`~pymc_dp.NoiseAwareConjugateGibbs`, the latent true counts swept by compiled kernels),
``pymc_dp.sample(inference="plugin")`` (:class:`~pymc_dp.PrivateConjugateGibbs`) and NUTS
(``pm.sample`` on the records). Imports and one tiny warm-up run of each sampler (on another,
100-record model: numba's and PyTensor's compilation) happen first so none pays one-off
costs, and a full garbage collection precedes each timed run. Nothing is shared between
runs: each timed run builds its own model, analysis, release, private model and compiled
functions. Timed: the whole sampling call (model analysis, release, compilation, sampling,
conversion). ESS: minimum bulk ESS over the K components (arviz.ess). Printed: ESS/s of each
and the ratios private / NUTS (target ≥ 100× for the default), also with PyMC's
sampling-only time (``sampling_time``).

Each private run is repeated ``--repeats`` times (fresh model and release each time; the run
with the median wall time is reported) and the default's wall time is broken down into phases, timed
with ``time.perf_counter`` around the real calls of the route (the functions are wrapped for
the private runs only; no call is skipped or cached): analysis (recognise), release, private
model, step construction, trace backend, ``pm.sample``'s own stages (step assignment, which
builds the model's logp graph; initial point; trace set-up; sampling; conversion to a
DataTree; convergence checks), stripping, ledger. Time spent in Python's garbage collector
during the run is shown separately (it is part of the phases' times).

Run: python benchmarks/conjugate_vs_nuts.py [--n 100000 --k 8 --draws 1000 --repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager

import arviz as az
import numpy as np
import pymc as pm
import pymc.sampling.mcmc as pm_mcmc

import pymc_dp
import pymc_dp.routes.laplace as laplace_route
import pymc_dp.sampling as dp_sampling
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.noise_aware_gibbs import NoiseAwareConjugateGibbs

PRIVATE = {"default": {}, "plugin": {"inference": "plugin"}}
"""pymc_dp.sample's options of each private run: the default inference, and plug-in."""

# (label, module or class, attribute): the real calls of the private run, in order.
PHASES: list[tuple[str, object, str]] = [
    ("analysis: recognise + classify inputs", dp_sampling, "validate_public"),
    ("analysis: recognise + classify inputs", dp_sampling, "recognise"),
    ("release (Laplace, OpenDP)", laplace_route, "release_all"),
    ("private model (rewrite)", laplace_route, "build_private_model"),
    ("step construction", PrivateConjugateGibbs, "__init__"),
    ("step construction", NoiseAwareConjugateGibbs, "__init__"),
    ("trace backend (point function)", laplace_route, "shared_function_trace"),
    ("pm.sample: assign steps (logp graph)", pm_mcmc, "assign_step_methods"),
    ("pm.sample: initial point", pm_mcmc, "make_initial_point_fns_per_chain"),
    ("pm.sample: trace set-up", pm_mcmc, "init_traces"),
    ("pm.sample: sampling (draws)", pm_mcmc, "_sample_many"),
    ("pm.sample: convergence checks", pm_mcmc, "run_convergence_checks"),
    ("pm.sample: DataTree conversion", pm_mcmc, "_sample_return"),
    ("strip groups + released statistics", laplace_route, "private_trace"),
    ("ledger attach", PrivacyLedger, "attach"),
]
NESTED = {"pm.sample: convergence checks": "pm.sample: DataTree conversion"}
"""Phases timed inside another one: subtracted from the outer phase."""


@contextmanager
def phase_timer(times: dict[str, float]):
    """Wrap every PHASES call with perf_counter; accumulate seconds per label into ``times``."""
    originals = []

    def timed(label: str, function: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                times[label] = times.get(label, 0.0) + time.perf_counter() - start

        return wrapper

    for label, owner, name in PHASES:
        namespace = owner.__dict__ if isinstance(owner, type) else vars(owner)
        function = namespace.get(name)
        if function is None:  # e.g. an older version of the route without this call
            continue
        originals.append((owner, name, function))
        setattr(owner, name, timed(label, function))
    try:
        yield
    finally:
        for owner, name, function in reversed(originals):
            setattr(owner, name, function)


@contextmanager
def gc_timer(out: list[float]):
    """Seconds spent in the garbage collector while the block runs, appended to ``out``."""
    spent, started = [0.0], []

    def callback(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            spent[0] += time.perf_counter() - started.pop()

    gc.callbacks.append(callback)
    try:
        yield
    finally:
        gc.callbacks.remove(callback)
        out.append(spent[0])


def build_model(y: np.ndarray, k: int) -> pm.Model:
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", np.ones(k))
        pm.Categorical("y", p=theta, observed=y)
    return model


def run(name: str, model: pm.Model, draws: int, cores: int, phases: bool = False) -> dict:
    kwargs = {"tune": draws, "chains": 2, "cores": cores, "random_seed": 1, "progressbar": False}
    times: dict[str, float] = {}
    gc_spent: list[float] = []
    gc.collect()
    with model:
        if name in PRIVATE:
            with phase_timer(times) if phases else _nothing(), gc_timer(gc_spent):
                start = time.perf_counter()
                idata = pymc_dp.sample(draws, epsilon=1.0, **PRIVATE[name], **kwargs)
                wall = time.perf_counter() - start
        else:
            with gc_timer(gc_spent):
                start = time.perf_counter()
                idata = pm.sample(draws, **kwargs)
                wall = time.perf_counter() - start
    ess = az.ess(idata, var_names=["theta"])["theta"].to_numpy()
    sampling = float(idata.posterior.attrs.get("sampling_time", np.nan))
    mean = idata.posterior["theta"].mean(("chain", "draw")).to_numpy()
    for inner, outer in NESTED.items():
        if inner in times and outer in times:
            times[outer] -= times[inner]
    return {
        "wall": wall,
        "sampling": sampling,
        "ess": ess.min(),
        "ess_med": np.median(ess),
        "mean": mean,
        "phases": times,
        "gc": gc_spent[0],
    }


@contextmanager
def _nothing():
    yield


def print_phases(r: dict) -> None:
    wall = r["wall"]
    print(f"\nWhere the default private run's wall time goes ({wall * 1e3:.0f} ms):")
    accounted = 0.0
    for label in dict.fromkeys(label for label, _, _ in PHASES):
        if label in r["phases"]:
            seconds = r["phases"][label]
            accounted += seconds
            print(f"  {label:<40}{seconds * 1e3:>8.1f} ms {100 * seconds / wall:>5.1f}%")
    other = wall - accounted
    print(
        f"  {'other (route glue, logging)':<40}{other * 1e3:>8.1f} ms {100 * other / wall:>5.1f}%"
    )
    print(f"  {'(of which garbage collection)':<40}{r['gc'] * 1e3:>8.1f} ms")
    fixed = wall - r["sampling"]
    print(
        f"  fixed cost (wall - PyMC sampling_time): {fixed * 1e3:.0f} ms "
        f"({100 * fixed / wall:.0f}% of wall)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="private runs (median reported)")
    parser.add_argument("--quick", action="store_true", help="n=10^4, 200 draws")
    args = parser.parse_args()
    n, draws = (10_000, 200) if args.quick else (args.n, args.draws)
    rng = np.random.default_rng(0)
    probs = np.arange(1, args.k + 1) / np.arange(1, args.k + 1).sum()
    y = rng.choice(args.k, size=n, p=probs)
    for name in (*PRIVATE, "nuts"):  # warm-up: imports, compilation, one-off caches
        run(name, build_model(y[:100], args.k), 20, 1)
    results, walls = {}, {}
    for name in PRIVATE:
        runs = [
            run(name, build_model(y, args.k), draws, args.cores, phases=name == "default")
            for _ in range(max(1, args.repeats))
        ]
        walls[name] = [r["wall"] for r in runs]
        results[name] = sorted(runs, key=lambda r: r["wall"])[(len(runs) - 1) // 2]
    results["nuts"] = run("nuts", build_model(y, args.k), draws, args.cores)
    print(f"Dirichlet-Categorical K={args.k}, n={n:,}, 2 chains x ({draws} tune + {draws} draws)")
    print(
        f"{'sampler':<10}{'wall s':>9}{'sampling s':>12}{'min ESS':>9}{'med ESS':>9}"
        f"{'ESS/s wall':>12}{'ESS/s samp':>12}{'/NUTS wall':>12}{'/NUTS samp':>12}"
    )
    q = results["nuts"]
    failed = not np.isfinite(q["ess"])
    for name, r in results.items():
        ratio_wall = (r["ess"] / r["wall"]) / (q["ess"] / q["wall"])
        ratio_sampling = (r["ess"] / r["sampling"]) / (q["ess"] / q["sampling"])
        print(
            f"{name:<10}{r['wall']:>9.3f}{r['sampling']:>12.3f}{r['ess']:>9.0f}"
            f"{r['ess_med']:>9.0f}{r['ess'] / r['wall']:>12.0f}{r['ess'] / r['sampling']:>12.0f}"
            f"{ratio_wall:>11.0f}x{ratio_sampling:>11.0f}x"
        )
    for name, times in walls.items():
        if len(times) > 1:
            print(
                f"{name} wall over {len(times)} runs: median {statistics.median(times):.3f} s, "
                f"min {min(times):.3f} s, max {max(times):.3f} s"
            )
    print("target: default (noise-aware) >= 100x NUTS's ESS per second (wall)")
    for name in PRIVATE:
        diff = float(np.abs(results[name]["mean"] - q["mean"]).max())
        failed |= not np.isfinite(results[name]["ess"]) or diff > 0.01
        print(f"{name}: max |posterior mean difference| from NUTS = {diff:.2e} (eps=1, n={n:,})")
    p = results["default"]
    print_phases(p)
    print(
        f"  NUTS for comparison: wall {q['wall']:.2f} s, sampling {q['sampling']:.2f} s, "
        f"fixed {q['wall'] - q['sampling']:.2f} s, garbage collection {q['gc']:.2f} s"
    )
    if failed:
        print("sanity check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
