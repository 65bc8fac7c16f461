"""Moved to :mod:`pymc_dp.analysis.conjugate` and :mod:`pymc_dp.graph.reading`.

Re-exported here for one release; import from the new modules.
"""

from pymc_dp.analysis.conjugate import analyse_model, find_conjugate_link, record_domain
from pymc_dp.families.base import ConjugateLink
from pymc_dp.graph.reading import (
    check_conjugate_dependents,
    is_data,
    observed_children,
    reject_imputation,
    split_parameter,
    variable_value,
)

__all__ = [
    "ConjugateLink",
    "analyse_model",
    "check_conjugate_dependents",
    "find_conjugate_link",
    "is_data",
    "observed_children",
    "record_domain",
    "reject_imputation",
    "split_parameter",
    "variable_value",
]
