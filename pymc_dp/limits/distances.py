"""Distances: Δ between datasets (in records), and d_MULT and d_R between measures.

Δ is a *dataset distance*, a number of records in the metric d under which the release is
ε-DP (Hamming for replace-one neighbours, symmetric difference for add/remove-one), not a
query sensitivity. The bounds widen as e^{εΔ}; Δ = ∞ (unconnected datasets) makes them
vacuous, never an error. d_MULT and d_R compare two measures on the output space: ε-DP is
d_MULT(P_x, P_x') <= ε·d(x, x') (Def. 2.1), Pufferfish posteriors satisfy d_R <= ε
(Thm 8.5), and on probabilities d_MULT <= d_R <= 2·d_MULT (Prop. E.17).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from pymc_dp.ledger import PrivacyLedger
from pymc_dp.limits._common import check_distance
from pymc_dp.limits.privacy import neighbouring_metric

__all__ = [
    "MeasureDistances",
    "data_diameter",
    "dataset_distance",
    "density_ratio_distance",
    "measure_distances",
    "multiplicative_distance",
    "support_diameter",
]

_PROBABILITY_TOLERANCE = 1e-9


def _records(dataset: Any) -> list:
    """The records of a dataset as hashable items (rows of a 2-d array become tuples)."""
    array = np.asarray(dataset)
    if array.ndim == 0:
        raise ValueError("a dataset must be a sequence of records, got a single value")
    return [tuple(np.ravel(row).tolist()) if array.ndim > 1 else row.item() for row in array]


def dataset_distance(x: Sequence, y: Sequence, metric: str | PrivacyLedger = "hamming") -> float:
    """The distance d(x, y) between two datasets, in records.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §2, metrics (A) and (B): the Hamming distance d_H(x, y) = #{i : x_i != y_i}
    for datasets of one length (∞ otherwise: bounded DP never relates datasets of different
    sizes), and the symmetric difference d_△(x, y) = |x △ y| of the datasets as multisets
    (unbounded DP; order is ignored).

    Parameters
    ----------
    x, y : sequence of records
        Datasets: 1-d arrays (one value per record) or 2-d arrays (one row per record).
    metric : str or PrivacyLedger
        ``"hamming"`` / ``"replace-one"`` or ``"symmetric-difference"`` /
        ``"add-remove-one"``, or a ledger whose events declare one relation
        (:func:`neighbouring_metric`).

    Returns
    -------
    float
        The number of records, or ``math.inf`` (Hamming distance between datasets of
        different lengths).

    Raises
    ------
    ValueError
        If the metric is unknown or a dataset is a single value.
    """
    name = neighbouring_metric(metric)
    rx, ry = _records(x), _records(y)
    if name == "hamming":
        if len(rx) != len(ry):
            return math.inf
        return float(sum(a != b for a, b in zip(rx, ry, strict=True)))
    cx, cy = Counter(rx), Counter(ry)
    return float(sum(abs(cx[v] - cy[v]) for v in cx.keys() | cy.keys()))


def support_diameter(
    datasets: Iterable[Sequence], metric: str | PrivacyLedger = "hamming"
) -> float:
    """Δ of a finite set of datasets: the largest distance between two of them.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §4 Thm 4.1 (Δ_θ, the d-diameter of the datasets that could have produced the
    release), §5 Thm 5.1 and §6 Thm 6.2/6.4 (the same over the hypotheses' or the prior's
    support). Brute force over every pair: for small enumerable supports.

    Parameters
    ----------
    datasets : iterable of sequences of records
        The support (at least one dataset).
    metric : str or PrivacyLedger
        As in :func:`dataset_distance`.

    Returns
    -------
    float
        The diameter in records (0 for one dataset; ``math.inf`` if two are unconnected).

    Raises
    ------
    ValueError
        If ``datasets`` is empty or the metric is unknown.
    """
    items = list(datasets)
    if not items:
        raise ValueError("datasets is empty")
    return max(
        (dataset_distance(a, b, metric) for a, b in itertools.combinations(items, 2)),
        default=0.0,
    )


def data_diameter(records: float, metric: str | PrivacyLedger | xr.DataTree = "hamming") -> float:
    """Δ when up to ``records`` records of the dataset are unknown to whoever reads the release.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §4 (discussion after Thm 4.1: "the analyst may have an upper bound on the
    number of records"; invariants such as a fixed n restrict the support), §5 (discussion
    of Thm 5.1: testing k records gives Δ = k) and §6 (after Thm 6.4: Δ = 1 for an attacker
    on one record, Δ = n for an analyst of all n records under d_H).

    * Hamming (replace-one; n fixed and public): Δ = ``records``. Use n for an analyst who
      knows nothing about any record, k for an attacker who knows all but k records.
    * Symmetric difference (add/remove-one): Δ = 2·``records``: two datasets of at most
      ``records`` unknown records can share none of them (n records removed, n others added).

    Parameters
    ----------
    records : int or math.inf
        The number of records that may differ (>= 0). ``math.inf`` when no bound on it is
        known: the bounds are then vacuous.
    metric : str, PrivacyLedger or xarray.DataTree
        The metric in which the release is ε-DP: a name, a neighbouring relation, or the
        ledger / trace of the release (:func:`neighbouring_metric`).

    Returns
    -------
    float
        Δ in records (``math.inf`` if ``records`` is).

    Raises
    ------
    ValueError
        If ``records`` is negative or not a number, or the metric cannot be determined.
    """
    count = check_distance(records, "records")
    name = neighbouring_metric(metric)
    return count if name == "hamming" else 2.0 * count


def _log_pair(p: Any, q: Any, log: bool) -> tuple[np.ndarray, np.ndarray]:
    lp = np.asarray(p, dtype=float)
    lq = np.asarray(q, dtype=float)
    if lp.shape != lq.shape:
        raise ValueError(f"p and q must have the same shape, got {lp.shape} and {lq.shape}")
    if lp.size == 0:
        raise ValueError("p and q are empty")
    if log:
        bad = np.isnan(lp) | np.isnan(lq) | (lp == np.inf) | (lq == np.inf)
        if bad.any():
            raise ValueError(f"log-densities must be finite or -inf: {int(bad.sum())} are not")
        return lp, lq
    bad = ~((lp >= 0) & (lq >= 0) & np.isfinite(lp) & np.isfinite(lq))
    if bad.any():
        raise ValueError(
            f"p and q must be finite and >= 0 (a pmf, or densities on one grid): "
            f"{int(bad.sum())} entries are not"
        )
    with np.errstate(divide="ignore"):
        return np.log(lp), np.log(lq)


def _log_ratios(p: Any, q: Any, log: bool) -> np.ndarray | None:
    """log(p/q) where both are positive; None if exactly one is zero somewhere."""
    lp, lq = _log_pair(p, q, log)
    zero_p, zero_q = np.isneginf(lp), np.isneginf(lq)
    if np.any(zero_p != zero_q):
        return None
    both = ~(zero_p & zero_q)
    return lp[both] - lq[both]


def multiplicative_distance(p: Any, q: Any, *, log: bool = False) -> float:
    """d_MULT(μ, ν) = sup_S |log μ(S)/ν(S)| = ess sup |log f/g|, the metric of ε-DP.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §2 (definition, with 0/0 := 1), Prop. E.3 (density form) and Lemma 3.4
    (d_MULT(μ, ν) <= ε iff μ lies in the interval of measures I(e^{-ε}ν, e^{ε}ν)). A
    mechanism is ε-DP iff d_MULT(P_x, P_x') <= ε·d(x, x') (Def. 2.1).

    Parameters
    ----------
    p, q : array_like of float, same shape
        Two pmfs on one finite space, or two densities on one grid (values >= 0); or their
        logarithms with ``log=True`` (-inf for zero).
    log : bool
        Whether ``p`` and ``q`` are log-densities.

    Returns
    -------
    float
        d_MULT in nats: exact for pmfs (the sup over sets is attained at a point); for
        densities on a grid, the largest value at a grid point. 0 where both are zero
        (0/0 := 1); ``math.inf`` if exactly one is zero somewhere.

    Raises
    ------
    ValueError
        If the shapes differ, an array is empty, or a value is negative, infinite or NaN.
    """
    ratios = _log_ratios(p, q, log)
    if ratios is None:
        return math.inf
    return float(np.max(np.abs(ratios), initial=0.0))


def density_ratio_distance(p: Any, q: Any, *, log: bool = False) -> float:
    """d_R(μ, ν) = ess sup_{a,b} log[f(a) g(b) / (f(b) g(a))], the metric of Pufferfish posteriors.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §8 Def. 8.4, eq. 18; Prop. E.11 (set form sup_{A,B} log[μ(A)ν(B)/(μ(B)ν(A))]:
    +∞ if exactly one measure is zero on a set, 0 if both are); Cor. E.13 (when finite,
    d_R = log ess sup f/g − log ess inf f/g). Thm 8.5: ε-Pufferfish holds iff every
    posterior over the partition is within d_R <= ε of its prior.

    Parameters
    ----------
    p, q : array_like of float, same shape
        As in :func:`multiplicative_distance`.
    log : bool
        Whether ``p`` and ``q`` are log-densities.

    Returns
    -------
    float
        d_R in nats (exact for pmfs; the grid maximum for densities on a grid), or
        ``math.inf`` if exactly one of ``p``, ``q`` is zero somewhere.

    Raises
    ------
    ValueError
        As :func:`multiplicative_distance`.
    """
    ratios = _log_ratios(p, q, log)
    if ratios is None:
        return math.inf
    if ratios.size == 0:
        return 0.0
    return float(np.max(ratios) - np.min(ratios))


class MeasureDistances(NamedTuple):
    """d_MULT and d_R of one pair of measures (nats)."""

    multiplicative: float
    density_ratio: float


def _total(values: Any, log: bool) -> float:
    array = np.asarray(values, dtype=float)
    return float(np.exp(array).sum()) if log else float(array.sum())


def measure_distances(p: Any, q: Any, *, log: bool = False) -> MeasureDistances:
    """d_MULT and d_R of two measures, checked against d_MULT <= d_R <= 2·d_MULT.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, Prop. E.17, eq. 2 and 35: on probability measures d_MULT <= d_R <= 2·d_MULT
    (both attained; the first in the limit); on general measures only d_R <= 2·d_MULT. So a
    Pufferfish posterior within d_R <= ε of its prior is within d_MULT <= ε of it, and a
    d_MULT ball of radius r lies in the d_R ball of radius 2r.

    Parameters
    ----------
    p, q : array_like of float, same shape
        As in :func:`multiplicative_distance`. When both sum to 1 (within 1e-9) they are
        treated as probabilities and both inequalities are checked.
    log : bool
        Whether ``p`` and ``q`` are log-densities.

    Returns
    -------
    MeasureDistances
        ``(multiplicative, density_ratio)``.

    Raises
    ------
    ValueError
        As :func:`multiplicative_distance`.
    RuntimeError
        If a checked inequality fails (a defect: it is a theorem for exact arithmetic;
        a relative slack of 1e-9 absorbs rounding).
    """
    d_mult = multiplicative_distance(p, q, log=log)
    d_r = density_ratio_distance(p, q, log=log)
    probabilities = all(abs(_total(v, log) - 1.0) <= _PROBABILITY_TOLERANCE for v in (p, q))
    slack = 1e-9 * max(1.0, d_mult if math.isfinite(d_mult) else 1.0)
    if not d_r <= 2.0 * d_mult + slack:
        raise RuntimeError(f"d_R = {d_r:g} > 2 d_MULT = {2 * d_mult:g} (Prop. E.17 violated)")
    if probabilities and not d_mult <= d_r + slack:
        raise RuntimeError(f"d_MULT = {d_mult:g} > d_R = {d_r:g} on probabilities (Prop. E.17)")
    return MeasureDistances(d_mult, d_r)
