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
    """Base class of every privacy-related error raised by pymc_dp.

    Examples
    --------
    Every refusal of ``pymc_dp`` is a ``PrivacyError``; catch it to handle them all:

    >>> import pymc_dp
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> try:
    ...     ledger.check(2.0)
    ... except pymc_dp.PrivacyError as error:
    ...     print(type(error).__name__)
    BudgetExceededError
    """


class BudgetExceededError(PrivacyError):
    """A release would take the ledger past its (epsilon, delta) budget.

    Raised before the release: nothing was released and the ledger is unchanged.

    Examples
    --------
    >>> import pymc_dp
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> ledger.check(0.75)  # fits: nothing is recorded by a check
    >>> ledger.check(1.5)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.BudgetExceededError: release of (epsilon=1.5, delta=0) would bring the total ...
    """


class InvalidPrivateDataError(PrivacyError, ValueError):
    """Private records fall outside the declared domain (NaN, out of support, unknown category).

    Raised before any noise is drawn: nothing was released and the ledger is unchanged.

    Examples
    --------
    A record outside its likelihood's support is refused before any noise is drawn:

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=np.array([0, 1, 2, 1]))  # 2 is not a 0/1 outcome
    ...     pymc_dp.sample(100, epsilon=1.0)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.InvalidPrivateDataError: y: ...
    """


class NonPrivateModelError(PrivacyError):
    """A model variable reads private data and no private mechanism can handle it.

    pymc_dp refuses such models instead of falling back to a non-private sampler.

    Examples
    --------
    A Normal likelihood has unbounded sufficient statistics until its records' range is declared
    (``data_bounds``):

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0, 1)
    ...     y = pm.Normal("y", mu=mu, sigma=1, observed=np.array([0.3, -1.2, 0.8]))
    ...     pymc_dp.sample(100, epsilon=1.0)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.NonPrivateModelError: y: ...
    """


class SessionCorruptedError(PrivacyError):
    """A session file fails verification: a line was edited, deleted, inserted, reordered or
    cut, or the file is not a session file. Its spend cannot be trusted, so nothing is
    charged or released until the file is restored.

    Examples
    --------
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_laplace
    >>> session = pymc_dp.PrivacySession("clinic.ledger", "clinic-2024", budget=1.0)
    >>> _ = release_laplace(np.array([3.0]), sensitivity=1.0, epsilon=0.5, ledger=session,
    ...                     neighbouring="replace-one", variables=("y",), statistic="count of y")
    >>> path = Path("clinic.ledger")  # someone rewrites the spent 0.5 as 0.05
    >>> _ = path.write_text(path.read_text().replace('"epsilon":0.5', '"epsilon":0.05'))
    >>> pymc_dp.PrivacySession("clinic.ledger", "clinic-2024", budget=1.0)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.SessionCorruptedError: ...
    """


class SessionMismatchError(PrivacyError, ValueError):
    """A session file was opened for another dataset or with another budget than it was
    created with. A session is never re-budgeted: start a new file for a new budget.

    Examples
    --------
    >>> import pymc_dp
    >>> session = pymc_dp.PrivacySession("clinic.ledger", "clinic-2024", budget=1.0)
    >>> pymc_dp.PrivacySession("clinic.ledger", "clinic-2025", budget=1.0)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.SessionMismatchError: ...
    """
