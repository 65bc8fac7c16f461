"""Exceptions raised by pymc_dp.

Every exception that can stop a release is raised *before* any noise is drawn, so that an
error never leaves a partial release behind.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "InvalidPrivateDataError",
    "NonPrivateModelError",
    "PrivacyError",
    "SessionCorruptedError",
    "SessionMismatchError",
]


class PrivacyError(Exception):
    """Base class of every privacy-related error raised by pymc_dp."""


class BudgetExceededError(PrivacyError):
    """A release would take the ledger past its (epsilon, delta) budget.

    Raised before the release: nothing was released and the ledger is unchanged.
    """


class InvalidPrivateDataError(PrivacyError, ValueError):
    """Private records fall outside the declared domain (NaN, out of support, unknown category).

    Raised before any noise is drawn: nothing was released and the ledger is unchanged.
    """


class NonPrivateModelError(PrivacyError):
    """A model variable reads private data and no private mechanism can handle it.

    pymc_dp refuses such models instead of falling back to a non-private sampler.
    """


class SessionCorruptedError(PrivacyError):
    """A session file fails verification: a line was edited, deleted, inserted, reordered or
    cut, or the file is not a session file. Its spend cannot be trusted, so nothing is
    charged or released until the file is restored."""


class SessionMismatchError(PrivacyError, ValueError):
    """A session file was opened for another dataset or with another budget than it was
    created with. A session is never re-budgeted: start a new file for a new budget."""
