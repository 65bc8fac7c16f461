"""Moved to :mod:`pymc_dp.families.bounds`; re-exported here for one release."""

from pymc_dp.families.bounds import *  # noqa: F403
from pymc_dp.families.bounds import __all__  # noqa: F401
