"""Moved to :mod:`pymc_dp.analysis.rewrite`; re-exported here for one release."""

from pymc_dp.analysis.rewrite import (
    RELEASED_TAG,
    build_private_model,
    data_free_model,
    released_statistics_of,
)

__all__ = ["RELEASED_TAG", "build_private_model", "data_free_model", "released_statistics_of"]
