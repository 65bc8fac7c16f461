"""Posterior sampling at temperature T: model analysis, tempered conjugate updates, sampling.

See :mod:`pymc_dp.tempered.analysis` (blocks and Δ), :mod:`pymc_dp.tempered.updates` (exact
tempered conditionals) and :mod:`pymc_dp.tempered.sampling` (``pymc_dp.sample`` with
``mechanism="ops" | "gibbs-exponential" | "metropolis"``).
"""

from pymc_dp.tempered.analysis import (
    BoundedLikelihood,
    TemperedBlock,
    TemperedModel,
    analyse_tempered_model,
)
from pymc_dp.tempered.updates import tempered_draw, tempered_parameters

__all__ = [
    "BoundedLikelihood",
    "TemperedBlock",
    "TemperedModel",
    "analyse_tempered_model",
    "tempered_draw",
    "tempered_parameters",
]
