"""pymc_dp: differentially private Bayesian inference for PyMC.

Release Laplace-privatised sufficient statistics once, sample any amount from the resulting
posterior at no further privacy cost — or release posterior draws at a temperature T — and
carry a privacy ledger inside every trace.
"""

from importlib import metadata as _metadata

from pymc.step_methods import STEP_METHODS

from pymc_dp import analysis, hmm, limits, models, records, routes, tempered, theory
from pymc_dp.analysis.conjugate import analyse_model
from pymc_dp.analysis.rewrite import build_private_model
from pymc_dp.errors import (
    BudgetExceededError,
    InvalidPrivateDataError,
    NonPrivateModelError,
    PrivacyError,
    ReleasedRunFailedError,
    SessionCorruptedError,
    SessionMismatchError,
    StaleReleaseError,
    UncertifiedTraceError,
    UncertifiedTraceWarning,
)
from pymc_dp.families.base import ConjugateLink
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger
from pymc_dp.mechanisms.statistics import (
    ReleasedStatistics,
    release_sufficient_statistics,
    sufficient_statistics,
    sufficient_statistics_sensitivity,
)
from pymc_dp.planning import allocate, plan
from pymc_dp.predictive import sample_posterior_predictive
from pymc_dp.publish import to_netcdf
from pymc_dp.records import Data
from pymc_dp.reporting import report
from pymc_dp.sampling import private_trace, sample
from pymc_dp.session import PrivacySession
from pymc_dp.steps import (
    NaiveBayesHMMGibbs,
    PrivateConjugateGibbs,
    PrivateMetropolis,
    TemperedConjugateGibbs,
)

try:
    __version__ = _metadata.version("pymc_dp")
    """The installed distribution's version (``pyproject.toml``, read by importlib.metadata)."""
except _metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

# idempotent registration
for _step in (PrivateConjugateGibbs, NaiveBayesHMMGibbs, PrivateMetropolis, TemperedConjugateGibbs):
    if _step not in STEP_METHODS:
        STEP_METHODS.append(_step)

__all__ = [
    "BudgetExceededError",
    "ConjugateLink",
    "Data",
    "InvalidPrivateDataError",
    "NaiveBayesHMMGibbs",
    "NonPrivateModelError",
    "PrivacyError",
    "PrivacyEvent",
    "PrivacyLedger",
    "PrivacySession",
    "PrivateConjugateGibbs",
    "PrivateMetropolis",
    "ReleasedRunFailedError",
    "ReleasedStatistics",
    "SessionCorruptedError",
    "SessionMismatchError",
    "StaleReleaseError",
    "TemperedConjugateGibbs",
    "UncertifiedTraceError",
    "UncertifiedTraceWarning",
    "__version__",
    "allocate",
    "analyse_model",
    "analysis",
    "build_private_model",
    "hmm",
    "limits",
    "models",
    "plan",
    "private_trace",
    "records",
    "release_sufficient_statistics",
    "report",
    "routes",
    "sample",
    "sample_posterior_predictive",
    "sufficient_statistics",
    "sufficient_statistics_sensitivity",
    "tempered",
    "theory",
    "to_netcdf",
]
