"""Numba kernels for the two loops NumPy cannot make fast enough (``benchmarks/hmm_sweep.py``).

* :func:`count_records` — one pass over the records that checks every code against the
  declared domain and increments the (cell, feature, category) counters. NumPy needs one
  ``bincount`` per feature plus separate range checks (6.7 M records/s at 10⁷ records;
  this kernel: about 10 M/s there, bound by random access to the tensor).
* :func:`ffbs_regions` — scaled forward filtering and backward sampling of each region's
  chain. In NumPy the T time steps cost several full-array passes each.

Numba is already installed as a PyTensor dependency. Results are bit-for-bit deterministic
given the uniforms, which come from the caller's ``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["count_records", "ffbs_regions"]


@njit(cache=True, nogil=True)
def count_records(region, time, records, n_regions, n_times, n_categories, counts):
    """Add each record to ``counts`` (R·T, D, J), int32; return (-1, -1) or the first bad code.

    32-bit counters keep a cell's D·J counters in fewer cache lines: records arrive in random
    cell order, so memory traffic, not arithmetic, sets the rate.

    A bad code is reported as (row, column) with columns 0..D-1 the features, D the region and
    D + 1 the time. Counting stops there; the caller discards ``counts`` on error.
    """
    n_records, n_features = records.shape
    for i in range(n_records):
        r = region[i]
        t = time[i]
        if r < 0 or r >= n_regions:
            return i, n_features
        if t < 0 or t >= n_times:
            return i, n_features + 1
        cell = r * n_times + t
        for d in range(n_features):
            x = records[i, d]
            if x < 0 or x >= n_categories[d]:
                return i, d
            counts[cell, d, x] += 1
    return -1, -1


@njit(cache=True, nogil=True)
def ffbs_regions(log_likelihood, initial, moves, uniforms):
    """Exact joint draw of every region's states given cell log-likelihoods.

    Parameters
    ----------
    log_likelihood : (R, T, K) float64, already divided by the temperature
    initial : (K,) initial-state weights (row 0 of A, raised to 1/T)
    moves : (K, K) transition weights (rows 1.. of A, raised to 1/T)
    uniforms : (R, T) float64 in [0, 1), one per draw

    Returns
    -------
    (R, T) int64
    """
    n_regions, n_times, n_states = log_likelihood.shape
    states = np.empty((n_regions, n_times), dtype=np.int64)
    filtered = np.empty((n_times, n_states))
    weights = np.empty(n_states)
    for r in range(n_regions):
        for t in range(n_times):
            peak = log_likelihood[r, t, 0]
            for k in range(1, n_states):
                peak = max(peak, log_likelihood[r, t, k])
            total = 0.0
            for k in range(n_states):
                if t == 0:
                    prior = initial[k]
                else:
                    prior = 0.0
                    for j in range(n_states):
                        prior += filtered[t - 1, j] * moves[j, k]
                value = prior * np.exp(log_likelihood[r, t, k] - peak)
                filtered[t, k] = value
                total += value
            if total > 0.0:
                for k in range(n_states):
                    filtered[t, k] /= total
        for t in range(n_times - 1, -1, -1):
            total = 0.0
            for k in range(n_states):
                weight = filtered[t, k]
                if t < n_times - 1:
                    weight *= moves[k, states[r, t + 1]]
                weights[k] = weight
                total += weight
            target = uniforms[r, t] * total
            chosen = n_states - 1
            cumulative = 0.0
            for k in range(n_states):
                cumulative += weights[k]
                if target < cumulative:
                    chosen = k
                    break
            states[r, t] = chosen
    return states
