"""Region × time cells of categorical records: the count tensor n[r, t, d, j].

The naive-Bayes HMM of Foulds et al. (2016, §5, App. E, eq. 70–71) sees the records only
through the per-cell, per-feature category counts

    n[r, t, d, j] = #{records i in cell (r, t) : x_{i,d} = j}.

The grid (regions × time steps) and every feature's category list form the *public domain*:
they are declared up front, never read off the data, and a record outside them is an error
(:class:`~pymc_dp.errors.InvalidPrivateDataError`), raised before anything is released.
Empty cells stay in the grid: dropping them would be a data-dependent, unaccounted release.

Features may have different numbers of categories K_d; the tensor is padded to
J = max_d K_d and entries j >= K_d are structural zeros (public, never noised).
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from pymc_dp.errors import InvalidPrivateDataError, value_free_repr
from pymc_dp.hmm._kernels import count_records

if TYPE_CHECKING:
    from pymc_dp.ledger import PrivacyEvent

__all__ = [
    "CellCounts",
    "cell_counts",
    "cell_counts_from_frame",
    "release_event_of",
    "validate_counts",
]


@value_free_repr
@dataclass(frozen=True)
class CellCounts:
    """Counts of categorical records per (region, time) cell and feature.

    Attributes
    ----------
    counts : ndarray of float64, shape (R, T, D, J)
        ``counts[r, t, d, j]`` = number of records in cell (r, t) whose feature d takes
        category j; J = max K_d, entries with j >= K_d are 0. After a Laplace release
        (:func:`pymc_dp.hmm.release_cell_counts`) the entries are noisy and need not be
        integers; they are finite, and negative only if released with ``projection="none"``.
    regions, times, features : tuple of str
        Labels of the R regions, T time steps and D features (the public grid).
    categories : tuple of tuple of str
        ``categories[d]`` lists feature d's K_d categories (its public domain).
    noisy : bool
        The counts are validated as released counts (finite; may be fractional or negative)
        rather than as raw counts of records. A flag anyone can set: it does not make counts
        private. Only :func:`pymc_dp.hmm.release_cell_counts` marks the counts it returns as
        a release (:func:`~pymc_dp.hmm.cells.release_event_of`), and only such counts may be
        sampled by ``pm.sample`` with :class:`~pymc_dp.NaiveBayesHMMGibbs` outside
        ``pymc_dp.sample``.

    Raw counts (``noisy=False``) must be non-negative integers whose per-feature sums agree
    in every cell: each record contributes exactly one count per feature, which the release's
    L1 sensitivity 2·D assumes (:func:`validate_counts`). Released counts need only be finite.
    """

    counts: np.ndarray
    regions: tuple[str, ...]
    times: tuple[str, ...]
    features: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    noisy: bool = False

    def __post_init__(self) -> None:
        counts = _float_counts(self.counts)
        object.__setattr__(self, "counts", counts)
        for name in ("regions", "times", "features"):
            object.__setattr__(self, name, tuple(str(v) for v in getattr(self, name)))
        object.__setattr__(
            self, "categories", tuple(tuple(str(c) for c in cats) for cats in self.categories)
        )
        _check_declared_features(self.features, self.categories)
        shape = (len(self.regions), len(self.times), len(self.features), self.max_categories)
        if counts.shape != shape:
            raise ValueError(f"counts has shape {counts.shape}, the labels give {shape}")
        validate_counts(
            counts,
            self.n_categories,
            allow_negative=self.noisy,
            raw=not self.noisy,
            features=self.features,
        )

    @property
    def n_categories(self) -> np.ndarray:
        """K_d for each feature, shape (D,)."""
        return np.array([len(c) for c in self.categories], dtype=np.int64)

    @property
    def max_categories(self) -> int:
        """J = max_d K_d (at least 1)."""
        return max((len(c) for c in self.categories), default=1)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(R, T, D, J)."""
        return self.counts.shape  # type: ignore[return-value]

    @property
    def category_mask(self) -> np.ndarray:
        """Boolean (D, J): True where category j exists for feature d."""
        return np.arange(self.max_categories)[None, :] < self.n_categories[:, None]

    def cell_totals(self) -> np.ndarray:
        """Records per cell (feature 0's counts summed), shape (R, T)."""
        return self.counts[:, :, 0, :].sum(axis=-1)

    def with_counts(self, counts: np.ndarray, *, noisy: bool | None = None) -> CellCounts:
        """The same grid with other counts (e.g. with held-out cells zeroed).

        ``noisy`` defaults to this object's flag (the validation the counts get). The result
        is never a release, whatever the counts
        (:func:`~pymc_dp.hmm.cells.release_event_of` is None): only
        :func:`pymc_dp.hmm.release_cell_counts` returns released counts.
        """
        return replace(self, counts=counts, noisy=self.noisy if noisy is None else noisy)

    def to_dataarray(self) -> xr.DataArray:
        """The tensor as a DataArray with dims (region, time, feature, category).

        ``category`` is the integer index j; ``attrs["categories"]`` maps each feature to its
        labels (JSON), so the array survives netCDF.
        """
        return xr.DataArray(
            self.counts,
            dims=("region", "time", "feature", "category"),
            coords={
                "region": list(self.regions),
                "time": list(self.times),
                "feature": list(self.features),
                "category": np.arange(self.max_categories),
            },
            attrs={
                "categories": json.dumps(dict(zip(self.features, self.categories, strict=True))),
                "noisy": int(self.noisy),
            },
        )


def _digest(counts: np.ndarray) -> bytes:
    array = np.ascontiguousarray(counts, dtype=np.float64)
    return hashlib.blake2b(repr(array.shape).encode() + array.tobytes(), digest_size=32).digest()


def _mark_released(counts: CellCounts, event: PrivacyEvent) -> CellCounts:
    """Mark ``counts`` as the output of the release recorded by ``event``; returns it.

    Called by :func:`pymc_dp.hmm.release_cell_counts` only. The marker is not a dataclass
    field: ``replace``, ``with_counts`` and the constructor never carry it, the tensor is made
    read-only, and :func:`~pymc_dp.hmm.cells.release_event_of` checks that the tensor is still
    the one released.
    """
    counts.counts.flags.writeable = False
    object.__setattr__(counts, "_release", (event, _digest(counts.counts)))
    return counts


def release_event_of(counts: CellCounts) -> PrivacyEvent | None:
    """The ledger event of the Laplace release that returned ``counts``, or None.

    None for raw counts and for any counts not returned, unchanged, by
    :func:`pymc_dp.hmm.release_cell_counts` (including counts merely flagged ``noisy``).
    """
    marker = counts.__dict__.get("_release")
    if marker is None:
        return None
    event, digest = marker
    if _digest(counts.counts) != digest:  # the released tensor was changed in place
        return None
    return event


def _float_counts(values) -> np.ndarray:
    """``values`` as a float64 array, refusing a tensor that does not hold numbers.

    Checked before converting: NumPy's own message quotes the offending entry (``could not
    convert string to float: ...``). The message gives the dtype and a number of entries,
    never a value.
    """
    array = np.asarray(values)
    if array.dtype.kind in "biuf":  # bool, integers, floats
        return array.astype(np.float64, copy=False)
    if array.dtype.kind == "O":  # a Python object per entry: numbers only
        not_numbers = sum(
            1
            for v in array.flat
            if not isinstance(v, (numbers.Real, np.bool_)) or isinstance(v, (str, bytes))
        )
        if not not_numbers:
            return array.astype(np.float64)
        detail = f"dtype object with {not_numbers} entries that are not real numbers"
    else:
        detail = f"dtype {array.dtype}"
    raise InvalidPrivateDataError(
        f"counts must be a tensor of numbers (a numeric or boolean dtype), got {detail}: count "
        "the records with cell_counts or cell_counts_from_frame; nothing was counted or released"
    )


def _check_declared_features(features: Sequence[str], categories: Sequence[Sequence[str]]) -> None:
    """The declared features (public): at least one, each with at least one category.

    Raises
    ------
    ValueError
        If no feature is declared, the categories are not one list per feature, or a feature
        declares no category (named). Nothing about the records is read.
    """
    if len(features) == 0:
        raise ValueError(
            "the counts need at least one feature: a naive-Bayes HMM sees the records only "
            "through their features, and none is declared; nothing was counted or released"
        )
    if len(categories) != len(features):
        raise ValueError(f"need categories for each of the {len(features)} features")
    empty = [repr(str(f)) for f, c in zip(features, categories, strict=True) if len(c) == 0]
    if empty:
        one = len(empty) == 1
        raise ValueError(
            f"feature{'' if one else 's'} {', '.join(empty)} ha{'s' if one else 've'} no "
            "categories: declare every feature's categories up front (at least one each); "
            "nothing was counted or released"
        )


def validate_counts(
    counts: np.ndarray,
    n_categories: Sequence[int],
    *,
    allow_negative: bool = False,
    raw: bool | None = None,
    features: Sequence[str] | None = None,
) -> None:
    """Check a count tensor: finite, zero outside each feature's categories and, if raw, counts.

    Parameters
    ----------
    counts : ndarray, shape (R, T, D, J)
    n_categories : sequence of int
        K_d for each of the D features.
    allow_negative : bool
        Admit negative entries (released counts before projection). Implies ``raw=False``.
    raw : bool, optional
        The counts are the private, unreleased ones (default: ``not allow_negative``). Raw
        counts must also be non-negative integers, and in every cell (r, t) every feature must
        sum to the same record total: each record adds exactly one count per feature, which
        the Laplace release's L1 sensitivity 2·D assumes. Released counts are noisy: they may
        be fractional and their per-feature sums disagree.
    features : sequence of str, optional
        Feature names, to name the features in messages.

    Raises
    ------
    InvalidPrivateDataError
        If an entry is NaN or infinite, negative, or non-zero at a padded category; or, for
        raw counts, not an integer or inconsistent across features. The messages give numbers
        of entries or cells, never a value or its position.
    """
    if raw is None:
        raw = not allow_negative
    if raw and allow_negative:
        raise ValueError("raw counts cannot be negative: pass raw=False for released counts")
    counts = _float_counts(counts)
    if counts.ndim != 4:
        raise InvalidPrivateDataError(
            f"counts must be 4-D (R, T, D, J), got {counts.ndim}-D; nothing was released"
        )
    n_categories = np.asarray(n_categories)
    if n_categories.shape != (counts.shape[2],):
        raise ValueError(f"need one K_d per feature ({counts.shape[2]}), got {n_categories}")
    if not counts.size:
        return
    if not np.isfinite(counts.sum()):  # one pass: NaN and ±inf propagate
        bad = int(np.sum(~np.isfinite(counts)))
        raise InvalidPrivateDataError(
            f"counts contain {bad} NaN or infinite entries; counts must be finite numbers "
            "(raw counts: numbers of records). Nothing was released"
        )
    if not allow_negative and counts.min() < 0:
        raise InvalidPrivateDataError(
            f"counts contain {int(np.sum(counts < 0))} negative entries; a count of records is "
            "at least 0 (only released counts may be negative). Nothing was released"
        )
    padded = np.arange(counts.shape[3])[None, :] >= n_categories[:, None]
    if padded.any() and np.any(counts[:, :, padded]):
        raise InvalidPrivateDataError(
            f"counts are non-zero at a category outside its feature in "
            f"{int(np.count_nonzero(counts[:, :, padded]))} entries; entries j >= K_d are "
            "structural zeros. Nothing was released"
        )
    if raw:
        _check_raw_counts(counts, features)


def _check_raw_counts(counts: np.ndarray, features: Sequence[str] | None = None) -> None:
    """Raw counts are integers, and every feature of a cell sums to the cell's record total."""
    fractional = int(np.count_nonzero(counts != np.floor(counts)))
    if fractional:
        raise InvalidPrivateDataError(
            f"raw counts contain {fractional} non-integer entries; a raw count is a number of "
            "records. Count the records with cell_counts or cell_counts_from_frame, or mark "
            "released counts noisy=True. Nothing was released"
        )
    totals = counts.sum(axis=3)  # (R, T, D); exact: integers far below 2**53
    disagree = totals != totals[:, :, :1]  # every feature against the first
    if disagree.any():
        names = (
            list(features) if features is not None else [f"#{d}" for d in range(counts.shape[2])]
        )
        odd = [repr(names[d]) for d in np.flatnonzero(disagree.any(axis=(0, 1)))]
        n_cells = int(np.count_nonzero(disagree.any(axis=2)))
        raise InvalidPrivateDataError(
            f"raw counts are inconsistent across features: in {n_cells} "
            f"cell{'s' if n_cells != 1 else ''}, feature{'s' if len(odd) != 1 else ''} "
            f"{', '.join(odd)} count a different number of records than feature "
            f"{names[0]!r}. Each record must take exactly one category of every feature (the "
            "release's L1 sensitivity 2·D assumes it): map missing values to a declared "
            "category and count with cell_counts or cell_counts_from_frame. Nothing was "
            "released"
        )


def cell_counts(
    region: np.ndarray,
    time: np.ndarray,
    records: np.ndarray,
    *,
    regions: Sequence[str],
    times: Sequence[str],
    features: Sequence[str],
    categories: Sequence[Sequence[str]],
) -> CellCounts:
    """Count integer-coded records into the (R, T, D, J) tensor, validating the domain.

    Parameters
    ----------
    region, time : ndarray of int, shape (N,)
        Each record's region index in 0..R-1 and time index in 0..T-1.
    records : ndarray of int, shape (N, D)
        ``records[i, d]`` is record i's category index for feature d, in 0..K_d-1.
    regions, times, features : sequence of str
        Labels of the declared grid (R, T) and of the D features.
    categories : sequence of sequence of str
        Each feature's declared categories (K_d of them).

    Returns
    -------
    CellCounts

    Raises
    ------
    InvalidPrivateDataError
        If a region, time or category code lies outside the declared domain, or the codes are
        not integers.
    ValueError
        If the shapes disagree.

    Notes
    -----
    One compiled pass over the records checks and counts them
    (``pymc_dp.hmm._kernels.count_records``); ``benchmarks/hmm_sweep.py`` measures the
    rate at 10⁷ records.
    """
    region, time, records = (np.asarray(a) for a in (region, time, records))
    for name, array in (("region", region), ("time", time), ("records", records)):
        if not np.issubdtype(array.dtype, np.integer):
            raise InvalidPrivateDataError(
                f"{name} codes must be integers, got {array.dtype}: code the records as "
                "integer indices into the declared domain; nothing was counted or released"
            )
    n_features = len(features)
    if records.ndim != 2 or records.shape[1] != n_features:
        raise ValueError(f"records must have shape (N, {n_features}), got {records.shape}")
    if region.shape != (records.shape[0],) or time.shape != region.shape:
        raise ValueError("region, time and records must describe the same N records")
    _check_declared_features(features, categories)
    n_regions, n_times = len(regions), len(times)
    n_categories = np.array([len(c) for c in categories], dtype=np.int64)
    width = int(n_categories.max(initial=1))
    counts = np.zeros((n_regions * n_times, n_features, width), dtype=np.int32)
    row, _ = count_records(
        np.ascontiguousarray(region),
        np.ascontiguousarray(time),
        np.ascontiguousarray(records),
        n_regions,
        n_times,
        n_categories,
        counts,
    )
    if row >= 0:  # the kernel stops at the first bad code: count them all, name no value
        raise InvalidPrivateDataError(
            _outside_domain_message(
                region, time, records, n_regions, n_times, features, n_categories
            )
        )
    return CellCounts(
        counts.reshape(n_regions, n_times, n_features, width).astype(np.float64),
        regions=tuple(regions),
        times=tuple(times),
        features=tuple(features),
        categories=tuple(tuple(c) for c in categories),
    )


def _outside_domain_message(region, time, records, n_regions, n_times, features, n_categories):
    """Which variables have codes outside the declared domain, and for how many records."""
    problems = []
    for what, codes, size in (
        ("region", region, n_regions),
        ("time", time, n_times),
        *((f"feature {name!r}", records[:, d], n_categories[d]) for d, name in enumerate(features)),
    ):
        bad = int(np.count_nonzero((codes < 0) | (codes >= size)))
        if bad:
            noun = "category" if what.startswith("feature") else "code"
            declared = f"codes 0..{size - 1}" if size else "none is declared: the grid is empty"
            problems.append(
                f"{what}: {bad} record{'s' if bad != 1 else ''} ha{'ve' if bad != 1 else 's'} "
                f"a {noun} outside the declared domain ({declared})"
            )
    return (
        "; ".join(problems) + ". Declare every region, time step and category up front, or "
        "map the records to declared ones before counting; nothing was counted or released"
    )


def _codes(column: pd.Series, domain: Sequence[str], what: str) -> np.ndarray:
    """Integer codes of ``column`` in the declared ``domain``; unknown or missing → error."""
    if column.isna().any():
        raise InvalidPrivateDataError(
            f"{what} has {int(column.isna().sum())} missing values; map them to a declared "
            "category (e.g. 'Missing') before counting; nothing was counted or released"
        )
    codes = pd.Index([str(v) for v in domain]).get_indexer(column.astype(str))
    if np.any(codes < 0):  # the count only: the values are private
        raise InvalidPrivateDataError(
            f"{what} has {int(np.sum(codes < 0))} values outside its declared domain "
            f"{list(domain)[:10]}{'...' if len(domain) > 10 else ''}; nothing was counted or "
            "released"
        )
    return np.asarray(codes, dtype=np.int64)


def cell_counts_from_frame(
    frame: pd.DataFrame,
    *,
    region: str,
    time: str,
    features: Sequence[str],
    regions: Sequence[str],
    times: Sequence[str],
    categories: Mapping[str, Sequence[str]],
) -> CellCounts:
    """Count the records of a DataFrame (one row per record) into a :class:`CellCounts`.

    Parameters
    ----------
    frame : DataFrame
        One row per record.
    region, time : str
        Columns holding each record's region and time-step label.
    features : sequence of str
        Feature columns (D of them).
    regions, times : sequence of str
        The declared grid. Cells without records stay (with zero counts).
    categories : mapping of str to sequence of str
        The declared categories of every feature. Missing values must already be mapped to a
        declared category.

    Raises
    ------
    InvalidPrivateDataError
        If a value is missing or lies outside its declared domain.
    """
    missing = [f for f in features if f not in categories]
    if missing:
        raise ValueError(f"no declared categories for features {missing}")
    _check_declared_features(features, [categories[f] for f in features])
    records = (
        np.column_stack([_codes(frame[f], categories[f], f"feature {f!r}") for f in features])
        if features
        else np.empty((len(frame), 0), dtype=np.int64)
    )
    return cell_counts(
        _codes(frame[region], regions, f"region column {region!r}"),
        _codes(frame[time], times, f"time column {time!r}"),
        records,
        regions=regions,
        times=times,
        features=features,
        categories=[categories[f] for f in features],
    )
