"""Shared pieces of :mod:`pymc_dp.limits`: the result tuple, argument checks, the radius εΔ.

Private to :mod:`pymc_dp.limits`. Every check returns the value or raises ``ValueError``
naming the argument; none puts an array's values in its message.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

SOURCE = (
    "Bailie & Gong (2023/2024), General Inferential Limits Under Differential and "
    "Pufferfish Privacy"
)
"""The paper every function of :mod:`pymc_dp.limits` implements (IJAR 172, 109242;
arXiv 2401.15491; ISIPTA 2023, PMLR 215:11-24)."""


_ROUNDING = 1e-9  # probabilities this far outside [0, 1] are rounding, and are clipped


class Bounds(NamedTuple):
    """A lower and an upper bound (arrays of one shape, or floats).

    Unpacks as ``lower, upper = ...``. The bounds are pointwise: they bound each number
    separately and are not themselves a probability distribution (never normalise them).
    """

    lower: Any
    upper: Any


def check_distance(distance: float, name: str = "distance") -> float:
    """Δ as a float: a dataset distance in records, >= 0, possibly ``math.inf``."""
    if isinstance(distance, bool):
        raise ValueError(f"{name} must be a number of records >= 0 (or math.inf), got a bool")
    value = float(distance)
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a number of records >= 0 (or math.inf), got {distance!r}")
    return value


def check_epsilon_value(epsilon: float, name: str = "epsilon") -> float:
    """ε as a float: finite and >= 0 (0 is what an empty ledger spent)."""
    if isinstance(epsilon, bool):
        raise ValueError(f"{name} must be a finite number >= 0, got a bool")
    value = float(epsilon)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {epsilon!r}")
    return value


def radius(epsilon: float, distance: float) -> float:
    """εΔ, with the convention 0·∞ = ∞ (Bailie & Gong, §2, Def. 2.1: an unconnected pair,
    d = ∞, is never constrained, even at ε = 0)."""
    if math.isinf(distance):
        return math.inf
    return epsilon * distance


def as_array(values: Any, name: str) -> Any:
    """``values`` as a float ndarray, or a float ``xarray.DataArray`` kept with its labels."""
    out = values.astype(float) if isinstance(values, xr.DataArray) else np.asarray(values, float)
    if out.size == 0:
        raise ValueError(f"{name} is empty")
    return out


def raw(values: Any) -> np.ndarray:
    """The ndarray behind ``values`` (an ndarray or a DataArray)."""
    return values.values if isinstance(values, xr.DataArray) else np.asarray(values)


def check_probability(values: Any, name: str) -> Any:
    """Probabilities in [0, 1] (no NaN), as :func:`as_array` returns them.

    Values within 1e-9 outside [0, 1] (rounding in a sum of probabilities) are clipped.
    """
    out = as_array(values, name)
    data = raw(out)
    bad = int(np.count_nonzero(~((data >= -_ROUNDING) & (data <= 1 + _ROUNDING))))
    if bad:
        raise ValueError(f"{name} must lie in [0, 1]: {bad} of {data.size} entries do not")
    return out.clip(0.0, 1.0) if isinstance(out, xr.DataArray) else np.clip(out, 0.0, 1.0)


def check_non_negative(values: Any, name: str) -> Any:
    """Finite non-negative numbers, as :func:`as_array` returns them."""
    out = as_array(values, name)
    data = raw(out)
    bad = int(np.count_nonzero(~((data >= 0) & np.isfinite(data))))
    if bad:
        raise ValueError(f"{name} must be finite and >= 0: {bad} of {data.size} entries are not")
    return out


def scale(values: Any, log_factor: float, *, keep_zeros: bool) -> Any:
    """``values · e^{log_factor}`` for finite ``values`` >= 0, without 0·∞ = NaN.

    When the factor is infinite, a positive value becomes ∞, and a zero stays 0 if the
    factor is a finite number too large for a float (0·e^{r} = 0) or if ``keep_zeros``:
    a prior probability or density of 0 stays 0 in every posterior (Bayes' rule). Otherwise
    (εΔ = ∞, unconnected datasets) a zero becomes ∞: nothing ties the bound to it.
    """
    with np.errstate(over="ignore"):
        factor = float(np.exp(log_factor))
    if math.isfinite(factor):
        return values * factor
    data = raw(values)
    zero = 0.0 if (keep_zeros or math.isfinite(log_factor)) else math.inf
    return values * 0.0 + np.where(data > 0, math.inf, zero)


def scalar_or_array(values: Any) -> Any:
    """A 0-d ndarray or NumPy scalar as a float; anything else unchanged."""
    if isinstance(values, np.generic) or (isinstance(values, np.ndarray) and values.ndim == 0):
        return float(values)
    return values
