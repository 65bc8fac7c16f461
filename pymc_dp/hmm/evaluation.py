"""Held-out evaluation of private naive-Bayes HMMs (Foulds et al. 2016, §5.2, Figs. 6 and 9).

Protocol (the paper's, with the unreported details fixed here):

* hold out a uniform 10% of the (region, time) cells; the held-out cells stay in the chains
  with zero counts (their states are then drawn from the transitions alone);
* fit on the training counts — raw (non-private), Laplace-released
  (:func:`~pymc_dp.hmm.privacy.release_cell_counts`) or by OPS (raw counts, truncation a0_d
  = 1/(M·K_d), temperature from ε) — with 200 Gibbs sweeps of which the first 100 are
  burn-in. Laplace fits read the release either as exact (plug-in: clamped cells, "laplace",
  or clamped per-state sums, "laplace (sum clamp)") or as Laplace observations of latent
  counts ("laplace (noise-aware)", :mod:`pymc_dp.hmm.noise_aware`); a noise-aware fit uses
  the same release as its plug-in twin (same seed), so the two are paired;
* score each held-out cell by its predictive probability given the neighbouring states,
  log Σ_k Pr(z_{r,t} = k | z_{r,t-1}, z_{r,t+1}, A) Pr(X^{(r,t)} | θ^{(k)}); Laplace and
  non-private runs average this probability over the 100 kept sweeps, OPS uses its last sweep
  only (the released draw);
* report the held-out log-likelihood per held-out record (sum over cells / records).

The evaluation reads raw held-out counts: it is the data holder's study of which mechanism to
use, not a release. Laplace noise here comes from NumPy (seeded, for reproducibility).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from pymc_dp.hmm.cells import CellCounts, release_event_of
from pymc_dp.hmm.gibbs import HMMData, emission_log_likelihood, sweep
from pymc_dp.hmm.noise_aware import ReleasedCounts, initial_latent_state, noise_aware_sweep
from pymc_dp.hmm.privacy import emission_lower_bounds, ops_cost, release_cell_counts
from pymc_dp.inference import INFERENCES
from pymc_dp.ledger import PrivacyLedger

__all__ = [
    "EvaluationTask",
    "effective_states",
    "evaluate",
    "heldout_cells",
    "heldout_log_likelihood",
    "inference_comparison",
    "initial_state",
    "run_gibbs",
    "summarise",
    "trend_checks",
]

LAPLACE_PROJECTIONS = {"laplace": "cell", "laplace (sum clamp)": "none"}
"""Plug-in Laplace variants: clamp every cell (Foulds eq. 16), or only the per-state sums."""
NOISE_AWARE = "laplace (noise-aware)"
"""The Laplace fit that reads the release as noisy observations (projection irrelevant)."""
METHOD_FAMILIES = ("non-private", *LAPLACE_PROJECTIONS, "ops")
"""Methods :func:`evaluate` can run (``methods=``); the noise-aware fit follows "laplace"."""
N_SWEEPS = 200
BURN_IN = 100


def heldout_cells(
    n_regions: int, n_times: int, rng: np.random.Generator, fraction: float = 0.1
) -> np.ndarray:
    """Boolean (R, T) mask of a uniform random ``fraction`` of the cells (at least one)."""
    n_cells = n_regions * n_times
    chosen = rng.choice(n_cells, size=max(1, round(fraction * n_cells)), replace=False)
    mask = np.zeros(n_cells, dtype=bool)
    mask[chosen] = True
    return mask.reshape(n_regions, n_times)


def initial_state(
    data: HMMData, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random states, random emissions (inside the truncation, if any), uniform transitions."""
    states = rng.integers(0, data.n_states, size=(data.n_regions, data.n_times))
    emission = np.zeros((data.n_states, data.n_features, data.width))
    for d, size in enumerate(data.n_categories):
        draw = rng.dirichlet(np.ones(size), size=data.n_states)
        if data.lower is not None:
            draw = data.lower[d] + (1 - size * data.lower[d]) * draw
        emission[:, d, :size] = draw
    transition = np.full((data.n_states + 1, data.n_states), 1.0 / data.n_states)
    return states, emission, transition


def run_gibbs(
    data: HMMData,
    rng: np.random.Generator,
    *,
    n_sweeps: int = N_SWEEPS,
    burn_in: int = BURN_IN,
    temperature: float = 1.0,
    method: str = "ffbs",
    noise_scale: float | None = None,
    collapsed_warmup: int = 0,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Run one chain of the sweeps that :class:`~pymc_dp.NaiveBayesHMMGibbs` runs.

    A plain loop over :func:`pymc_dp.hmm.gibbs.sweep` — or, given the Laplace
    ``noise_scale`` of released counts, over
    :func:`pymc_dp.hmm.noise_aware.noise_aware_sweep` from
    :func:`~pymc_dp.hmm.noise_aware.initial_latent_state`, its first ``collapsed_warmup``
    sweeps with collapsed state updates (FFBS, T = 1 only) — without
    PyMC's per-model compilation and per-draw bookkeeping, for simulation studies with
    hundreds of fits.

    Returns
    -------
    list of (states, emission, transition)
        The ``n_sweeps - burn_in`` kept sweeps.
    """
    state = initial_state(data, rng)
    kept = []
    if noise_scale is not None:
        if temperature != 1 or method != "ffbs":
            raise ValueError("noise-aware sampling runs FFBS at temperature 1 only")
        released = ReleasedCounts.from_data(data, noise_scale)
        emission, latent = initial_latent_state(data, released, state[0], rng)
        state = (state[0], emission, state[2])
        for i in range(n_sweeps):
            *state, latent = noise_aware_sweep(
                data, released, *state, latent, rng, collapsed_states=i < collapsed_warmup
            )
            if i >= burn_in:
                kept.append(tuple(state))
        return kept
    for i in range(n_sweeps):
        state = sweep(data, *state, rng, temperature=temperature, method=method)
        if i >= burn_in:
            kept.append(state)
    return kept


def heldout_log_likelihood(
    heldout: HMMData,
    mask: np.ndarray,
    states: np.ndarray,
    emission: np.ndarray,
    transition: np.ndarray,
) -> np.ndarray:
    """log predictive probability of every held-out cell given its neighbours' states.

    Parameters
    ----------
    heldout : HMMData
        Counts of the held-out cells (others may be anything; only ``mask`` cells are read).
    mask : ndarray of bool, shape (R, T)
    states, emission, transition
        One posterior sample.

    Returns
    -------
    ndarray, shape (number of held-out cells,), in ``mask``'s row-major order.
    """
    regions, times = np.nonzero(mask)
    loglik = emission_log_likelihood(heldout, emission)[regions, times]  # (H, K)
    previous = np.where(times > 0, states[regions, np.maximum(times - 1, 0)] + 1, 0)
    log_prior = np.log(np.maximum(transition[previous], 1e-300))  # (H, K)
    has_next = times < mask.shape[1] - 1
    following = states[regions, np.minimum(times + 1, mask.shape[1] - 1)]
    log_next = np.log(np.maximum(transition[1:, following].T, 1e-300))  # (H, K)
    log_prior = log_prior + np.where(has_next[:, None], log_next, 0.0)
    log_prior -= logsumexp(log_prior, axis=1, keepdims=True)
    return logsumexp(log_prior + loglik, axis=1)


def effective_states(states: np.ndarray, n_states: int) -> float:
    """exp(entropy) of the share of cells in each state: K for equal use, 1 for one state."""
    share = np.bincount(states.ravel(), minlength=n_states) / states.size
    share = share[share > 0]
    return float(np.exp(-np.sum(share * np.log(share))))


@dataclass(frozen=True)
class EvaluationTask:
    """One fit: a split, a mechanism (with ε and M) and a number of states."""

    split: int
    method: str  # "non-private", a key of LAPLACE_PROJECTIONS, NOISE_AWARE or "ops"
    n_states: int
    epsilon: float = float("nan")
    truncation: float = float("nan")
    seed: int = 0


def _fit_and_score(counts: CellCounts, task: EvaluationTask) -> dict:
    rng = np.random.default_rng(task.seed)
    split_rng = np.random.default_rng([task.split, 2016])  # same split for every method
    mask = heldout_cells(counts.shape[0], counts.shape[1], split_rng)
    training = counts.counts.copy()
    training[mask] = 0.0
    train = counts.with_counts(training)
    temperature, lower, keep_last, noise_scale = 1.0, None, False, None
    if task.method in LAPLACE_PROJECTIONS or task.method == NOISE_AWARE:
        train = release_cell_counts(
            train,
            task.epsilon,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
            projection=LAPLACE_PROJECTIONS.get(task.method, "cell"),
        )
        if task.method == NOISE_AWARE:
            noise_scale = release_event_of(train).noise_scale
    elif task.method == "ops":
        lower = emission_lower_bounds(counts.n_categories, task.truncation)
        temperature = ops_cost(counts.n_categories, lower, task.epsilon).temperature
        keep_last = True
    elif task.method != "non-private":
        raise ValueError(f"unknown method {task.method!r}")
    data = HMMData.from_tensor(train.counts, counts.n_categories, task.n_states, lower=lower)
    start = time.process_time()
    kept = run_gibbs(data, rng, temperature=temperature, noise_scale=noise_scale)
    seconds = time.process_time() - start
    if keep_last:
        kept = kept[-1:]
    heldout = HMMData.from_tensor(counts.counts, counts.n_categories, task.n_states)
    scores = np.array([heldout_log_likelihood(heldout, mask, *s) for s in kept])  # (S, H)
    per_cell = logsumexp(scores, axis=0) - np.log(len(kept))
    n_records = counts.cell_totals()[mask].sum()
    return {
        "split": task.split,
        "method": task.method if task.method != "ops" else f"ops (M={task.truncation:g})",
        "epsilon": task.epsilon,
        "n_states": task.n_states,
        "temperature": temperature,
        "heldout_ll_per_record": float(per_cell.sum() / n_records),
        "occupied_states": float(np.mean([np.unique(s[0]).size for s in kept])),
        "effective_states": float(np.mean([effective_states(s[0], task.n_states) for s in kept])),
        "heldout_records": int(n_records),
        "cpu_seconds_per_sweep": seconds / N_SWEEPS,
    }


def _tasks(
    epsilons,
    n_states_list,
    truncations,
    n_splits,
    seed,
    methods: Sequence[str] = METHOD_FAMILIES,
    inferences: Sequence[str] = ("plugin",),
) -> list[EvaluationTask]:
    """The fits to run, with their seeds.

    Seeds are laid out over every method family, in a fixed order, whatever ``methods``
    selects: a fit's seed (hence its release) does not depend on which other fits run. A
    noise-aware fit takes the seed of its plug-in "laplace" twin: the same release.
    """
    unknown = set(methods) - set(METHOD_FAMILIES)
    if unknown:
        raise ValueError(f"methods must be among {METHOD_FAMILIES}, got {sorted(unknown)}")
    unknown = set(inferences) - set(INFERENCES)
    if unknown or not inferences:
        raise ValueError(f"inferences must be among {INFERENCES}, got {list(inferences)}")
    layout = []
    for split in range(n_splits):
        for k in n_states_list:
            layout.append(EvaluationTask(split, "non-private", k))
            for eps in epsilons:
                layout.extend(EvaluationTask(split, m, k, eps) for m in LAPLACE_PROJECTIONS)
                layout.extend(EvaluationTask(split, "ops", k, eps, m) for m in truncations)
    seeds = np.random.SeedSequence(seed).generate_state(len(layout))
    tasks = []
    for task, task_seed in zip(layout, seeds, strict=True):
        task = EvaluationTask(**{**task.__dict__, "seed": int(task_seed)})
        if task.method not in methods:
            continue
        if task.method not in LAPLACE_PROJECTIONS or "plugin" in inferences:
            tasks.append(task)
        if task.method == "laplace" and "noise-aware" in inferences:
            tasks.append(EvaluationTask(**{**task.__dict__, "method": NOISE_AWARE}))
    return tasks


def evaluate(
    counts: CellCounts,
    *,
    epsilons: Sequence[float] = (0.1, 0.3, 1.0, 3.0, 10.0),
    n_states: Sequence[int] = (1, 2, 3, 10),
    truncations: Sequence[float] = (10.0, 100.0),
    n_splits: int = 5,
    seed: int = 0,
    processes: int = 1,
    methods: Sequence[str] = METHOD_FAMILIES,
    inferences: Sequence[str] = ("plugin",),
) -> pd.DataFrame:
    """Held-out log-likelihood of every (split, method, ε, K): one row per fit.

    By default runs ``n_splits × |K| × (1 + |ε| × (2 + |M|))`` fits of ``N_SWEEPS``
    sweeps, in ``processes`` worker processes. ``methods`` picks among
    ``METHOD_FAMILIES`` ("laplace" and "laplace (sum clamp)" are the plug-in fits, run
    when ``"plugin"`` is in ``inferences``); ``inferences`` containing ``"noise-aware"``
    adds a ``NOISE_AWARE`` fit on the release of every "laplace" fit (when "laplace" is in
    ``methods``). The seeds of the fits do not depend on ``methods`` or ``inferences``
    (``_tasks``).
    """
    tasks = _tasks(epsilons, n_states, truncations, n_splits, seed, methods, inferences)
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            rows = list(pool.map(_fit_and_score, [counts] * len(tasks), tasks, chunksize=4))
    else:
        rows = [_fit_and_score(counts, t) for t in tasks]
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error over splits of the held-out log-likelihood per record."""
    keys = [c for c in ("regions", "method", "n_states", "epsilon") if c in results.columns]
    grouped = results.fillna({"epsilon": 0.0}).groupby(keys)
    table = grouped.agg(
        heldout_ll=("heldout_ll_per_record", "mean"),
        se=("heldout_ll_per_record", lambda x: x.std(ddof=1) / np.sqrt(len(x))),
        occupied_states=("occupied_states", "mean"),
        effective_states=("effective_states", "mean"),
        splits=("split", "nunique"),
    )
    return table.reset_index().replace({"epsilon": {0.0: np.nan}})


def trend_checks(results: pd.DataFrame) -> pd.DataFrame:
    """Foulds et al.'s qualitative findings, per region set, K and ε, paired over splits.

    Columns: ``laplace_minus_best_ops`` — mean over splits of (Laplace with cell clamping −
    the better OPS truncation) held-out log-likelihood per record, > 0 when Laplace wins —
    with its standard error ``se`` (every method sees the same split, so the difference is
    paired); ``sum_clamp_minus_best_ops`` and ``sum_clamp_se``, the same for Laplace with
    sum clamping (when evaluated); ``laplace_occupied_states``/``laplace_effective_states``
    and the same for the non-private fit — mean number of states holding at least one cell,
    and :func:`effective_states`.
    """
    keys = [*(c for c in ("regions",) if c in results.columns), "n_states"]
    private = results.dropna(subset=["epsilon"])
    wide = private.pivot_table(
        index=[*keys, "epsilon", "split"], columns="method", values="heldout_ll_per_record"
    )
    ops_columns = [c for c in wide.columns if str(c).startswith("ops")]
    if not ops_columns or "laplace" not in wide.columns:
        return pd.DataFrame()  # nothing to compare
    best_ops = wide[ops_columns].max(axis=1)
    columns = {"laplace": ("laplace_minus_best_ops", "se")}
    columns["laplace (sum clamp)"] = ("sum_clamp_minus_best_ops", "sum_clamp_se")
    parts = []
    for method, (name, se) in columns.items():
        if method in wide.columns:
            difference = (wide[method] - best_ops).groupby(level=[*keys, "epsilon"])
            parts.append(
                difference.agg(["mean", lambda x: x.std(ddof=1) / np.sqrt(len(x))]).set_axis(
                    [name, se], axis=1
                )
            )
    table = pd.concat(parts, axis=1)
    laplace = private[private["method"] == "laplace"]
    reference = results[results["method"] == "non-private"].groupby(keys)
    for column in ("occupied_states", "effective_states"):
        table[f"laplace_{column}"] = laplace.groupby([*keys, "epsilon"])[column].mean()
    table = table.reset_index()
    for column in ("occupied_states", "effective_states"):
        per_key = reference[column].mean().loc[pd.MultiIndex.from_frame(table[keys])]
        table[f"nonprivate_{column}"] = per_key.to_numpy()
    return table


def inference_comparison(results: pd.DataFrame) -> pd.DataFrame:
    """Noise-aware against plug-in Laplace fits, paired over splits (same releases).

    One row per region set, K and ε with: ``plugin``, ``noise_aware`` and ``non_private`` —
    mean held-out log-likelihood per record over splits; ``difference`` — mean over splits of
    (noise-aware − plug-in), > 0 when noise-aware is better, with its paired standard error
    ``se``; ``loss_recovered`` — the share of the plug-in fit's loss against the non-private
    fit that noise-aware inference recovers, (noise_aware − plugin) / (non_private − plugin)
    (1: no loss left; 0.5: the loss halved); ``plugin_cpu_s``, ``noise_aware_cpu_s`` — mean
    CPU seconds per sweep, when recorded.
    """
    keys = [*(c for c in ("regions",) if c in results.columns), "n_states"]
    private = results[results["method"].isin(["laplace", NOISE_AWARE])]
    wide = private.pivot_table(
        index=[*keys, "epsilon", "split"], columns="method", values="heldout_ll_per_record"
    )
    if wide.empty or not {"laplace", NOISE_AWARE} <= set(wide.columns):
        return pd.DataFrame()
    difference = (wide[NOISE_AWARE] - wide["laplace"]).groupby(level=[*keys, "epsilon"])
    table = difference.agg(["mean", lambda x: x.std(ddof=1) / np.sqrt(len(x))]).set_axis(
        ["difference", "se"], axis=1
    )
    means = wide.groupby(level=[*keys, "epsilon"]).mean()
    table.insert(0, "noise_aware", means[NOISE_AWARE])
    table.insert(0, "plugin", means["laplace"])
    table = table.reset_index()
    reference = results[results["method"] == "non-private"].groupby(keys)
    per_key = reference["heldout_ll_per_record"].mean().loc[pd.MultiIndex.from_frame(table[keys])]
    table.insert(len(keys) + 1, "non_private", per_key.to_numpy())
    table["loss_recovered"] = (table["noise_aware"] - table["plugin"]) / (
        table["non_private"] - table["plugin"]
    )
    if "cpu_seconds_per_sweep" in private.columns:
        cpu = private.pivot_table(
            index=[*keys, "epsilon"], columns="method", values="cpu_seconds_per_sweep"
        )
        index = pd.MultiIndex.from_frame(table[[*keys, "epsilon"]])
        table["plugin_cpu_s"] = cpu["laplace"].loc[index].to_numpy()
        table["noise_aware_cpu_s"] = cpu[NOISE_AWARE].loc[index].to_numpy()
    return table
