"""Synthetic data from the naive-Bayes HMM (for tests, benchmarks and checks of recovery)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_dp.errors import value_free_repr
from pymc_dp.hmm.cells import CellCounts, cell_counts
from pymc_dp.hmm.gibbs import categorical, simulate_chains

__all__ = ["SimulatedHMM", "simulate_records"]


@value_free_repr
@dataclass(frozen=True)
class SimulatedHMM:
    """Records drawn from known parameters, and the truth.

    Attributes
    ----------
    region, time : ndarray of int, shape (N,)
    records : ndarray of int, shape (N, D)
    states : ndarray of int, shape (R, T)
    emission : ndarray, shape (K, D, J)
    transition : ndarray, shape (K + 1, K)
    counts : CellCounts
    """

    region: np.ndarray
    time: np.ndarray
    records: np.ndarray
    states: np.ndarray
    emission: np.ndarray
    transition: np.ndarray
    counts: CellCounts


def simulate_records(
    n_regions: int,
    n_times: int,
    n_states: int,
    n_categories,
    n_records: int,
    rng: np.random.Generator,
    *,
    stay: float = 0.9,
    concentration: float = 0.5,
) -> SimulatedHMM:
    """Draw ``n_records`` records spread uniformly over the cells of a sticky HMM.

    Transitions stay in the current state with probability ``stay``; emissions are
    Dirichlet(``concentration``) draws; each record's cell is uniform over the R·T cells.
    """
    n_categories = np.asarray(n_categories, dtype=np.int64)
    n_features, width = len(n_categories), int(n_categories.max())
    transition = np.full((n_states + 1, n_states), (1 - stay) / max(n_states - 1, 1))
    transition[1:][np.eye(n_states, dtype=bool)] = stay if n_states > 1 else 1.0
    transition[0] = 1.0 / n_states
    emission = np.zeros((n_states, n_features, width))
    for d, size in enumerate(n_categories):
        emission[:, d, :size] = rng.dirichlet(np.full(size, concentration), size=n_states)
    states = simulate_chains(transition, n_regions, n_times, rng)
    region = rng.integers(0, n_regions, size=n_records)
    time = rng.integers(0, n_times, size=n_records)
    z = states[region, time]
    records = np.empty((n_records, n_features), dtype=np.int64)
    for d, size in enumerate(n_categories):
        records[:, d] = categorical(emission[z, d, :size], rng)
    counts = cell_counts(
        region,
        time,
        records,
        regions=[f"r{r}" for r in range(n_regions)],
        times=[f"t{t}" for t in range(n_times)],
        features=[f"f{d}" for d in range(n_features)],
        categories=[[f"c{j}" for j in range(size)] for size in n_categories],
    )
    return SimulatedHMM(region, time, records, states, emission, transition, counts)
