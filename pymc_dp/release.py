"""Moved to :mod:`pymc_dp.mechanisms.statistics`; re-exported here for one release."""

from pymc_dp.mechanisms.statistics import (
    ReleasedStatistics,
    release_all,
    release_sufficient_statistics,
    released_components,
    sufficient_statistics,
    sufficient_statistics_sensitivity,
)

__all__ = [
    "ReleasedStatistics",
    "release_all",
    "release_sufficient_statistics",
    "released_components",
    "sufficient_statistics",
    "sufficient_statistics_sensitivity",
]
