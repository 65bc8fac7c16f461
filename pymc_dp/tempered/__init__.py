"""Moved: model analysis to :mod:`pymc_dp.analysis.tempered`, tempered updates to
:mod:`pymc_dp.families.tempered`, the sampling route to :mod:`pymc_dp.routes.tempered`.

Re-exported here for one release; import from the new modules.
"""

from pymc_dp.analysis.tempered import (
    BoundedLikelihood,
    TemperedBlock,
    TemperedModel,
    analyse_tempered_model,
)
from pymc_dp.families.tempered import tempered_draw, tempered_parameters

__all__ = [
    "BoundedLikelihood",
    "TemperedBlock",
    "TemperedModel",
    "analyse_tempered_model",
    "tempered_draw",
    "tempered_parameters",
]
