"""Argument checks and the vacuous-bound warning shared by the per-paper theory modules.

Private to :mod:`pymc_dp.theory`: every check returns the value as a float (or int) or raises
``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = [
    "VacuousBoundWarning",
    "interval",
    "non_negative",
    "open_unit",
    "positive",
    "positive_int",
    "warn_if_vacuous",
]


class VacuousBoundWarning(UserWarning):
    """A computed privacy bound is vacuous (e.g. a δ ≥ 1 promises nothing)."""


def positive(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` unless it is finite and > 0."""
    out = float(value)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return out


def non_negative(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` unless it is finite and >= 0."""
    out = float(value)
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return out


def open_unit(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` unless 0 < value < 1."""
    out = float(value)
    if not math.isfinite(out) or not 0.0 < out < 1.0:
        raise ValueError(f"{name} must satisfy 0 < {name} < 1, got {value!r}")
    return out


def positive_int(value: int, name: str) -> int:
    """Return ``value`` as an int, or raise ``ValueError`` unless it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def interval(lower: float, upper: float, lower_name: str, upper_name: str) -> tuple[float, float]:
    """Validate 0 < lower < upper < ∞ (the support [c₁, c₂] of a trimmed prior)."""
    lo = positive(lower, lower_name)
    hi = positive(upper, upper_name)
    if not lo < hi:
        raise ValueError(f"need {lower_name} < {upper_name}, got {lower!r} and {upper!r}")
    return lo, hi


def warn_if_vacuous(value: float, what: str) -> None:
    """Warn with :class:`VacuousBoundWarning` if a δ is >= 1 (at the calculator's caller)."""
    if value >= 1.0:
        warnings.warn(
            f"{what} = {value:.4g} >= 1: the (0, δ) guarantee is vacuous (it promises nothing)",
            VacuousBoundWarning,
            stacklevel=3,
        )
