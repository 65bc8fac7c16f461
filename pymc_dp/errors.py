"""Exceptions raised by pymc_dp, and the rule that what it prints shows no record.

Every exception that can stop a release is raised *before* any noise is drawn, so that an
error never leaves a partial release behind. Messages name variables and counts, never
values; so do the reprs of the internal objects that hold records or values computed from
them (:func:`value_free_repr`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
    "BudgetExceededError",
    "InvalidPrivateDataError",
    "NonPrivateModelError",
    "PrivacyError",
    "ReleasedRunFailedError",
    "SessionCorruptedError",
    "SessionMismatchError",
    "StaleReleaseError",
    "UncertifiedTraceError",
    "UncertifiedTraceWarning",
    "value_free_repr",
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


class ReleasedRunFailedError(PrivacyError, RuntimeError):
    """A run failed *after* its release: the privacy cost was charged (and the noise drawn or
    the draws made) but no trace was returned.

    The spend stands: the ledger (or session) records it, and ``events`` lists this run's
    events. The error that stopped the run is chained as ``__cause__``. Raised by
    :func:`pymc_dp.sample` for a failure that no check before the charge could exclude (a
    sampler that cannot start, an interrupted cluster, ...).

    Examples
    --------
    A callback that fails during sampling, after the release:

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> ledger = pymc_dp.PrivacyLedger(budget=2.0)
    >>> try:
    ...     pymc_dp.sample(10, tune=10, chains=1, model=model, epsilon=1.0, ledger=ledger,
    ...                    callback=lambda trace, draw: 1 / 0, progressbar=False)
    ... except pymc_dp.ReleasedRunFailedError as error:
    ...     print(len(error.events), ledger.epsilon, type(error.__cause__).__name__)
    1 1.0 ZeroDivisionError
    """

    def __init__(self, message: str, events: tuple = ()) -> None:
        super().__init__(message)
        self.events = tuple(events)


class StaleReleaseError(PrivacyError, ValueError):
    """A step's release was made from other records than the model now holds (``pm.set_data``
    after the step was built). Raised before anything is charged, released or sampled.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> with pm.Model() as model:
    ...     records = pm.Data("records", np.array([1, 0, 1, 1, 0, 1]))
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=records)
    ...     step = pymc_dp.PrivateConjugateGibbs(epsilon=1.0)  # releases now
    ...     pm.set_data({"records": np.array([0, 0, 0, 1, 0, 0])})
    >>> pymc_dp.sample(5, step=step, model=model, progressbar=False)
    Traceback (most recent call last):
    ...
    pymc_dp.errors.StaleReleaseError: y: the step's release was made from other ...
    """


class UncertifiedTraceError(PrivacyError, ValueError):
    """A trace holds content its privacy ledger does not cover, or carries no ledger, and
    :func:`pymc_dp.to_netcdf` was asked to write it. Nothing was written.

    A trace from :func:`pymc_dp.sample` is certified when its ledger is attached
    (:mod:`pymc_dp.certificate`); a group added afterwards — ``observed_data`` from
    ``pm.sample_posterior_predictive(..., extend_inferencedata=True)``, ``log_likelihood``
    from ``pm.compute_log_likelihood`` — or a variable added or changed by hand is not.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import xarray as xr
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    ...     idata = pymc_dp.sample(20, tune=20, chains=1, epsilon=1.0, progressbar=False)
    >>> idata["observed_data"] = xr.Dataset({"y": ("y_dim_0", outcome)})  # as PyMC would
    >>> pymc_dp.to_netcdf(idata, "trace.nc")
    Traceback (most recent call last):
    ...
    pymc_dp.errors.UncertifiedTraceError: not written: trace.nc ... group 'observed_data' ...
    """


class UncertifiedTraceWarning(UserWarning):
    """A trace's ledger no longer covers everything the trace holds (content added or changed
    after :func:`pymc_dp.sample` certified it): warned by
    :meth:`pymc_dp.PrivacyLedger.from_datatree`, which still returns the ledger.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    ...     idata = pymc_dp.sample(20, tune=20, chains=1, epsilon=1.0, progressbar=False)
    >>> idata["posterior"]["odds"] = idata["posterior"]["p"] / (1 - idata["posterior"]["p"])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    >>> print(caught[0].category.__name__, ledger.epsilon)
    UncertifiedTraceWarning 1.0
    >>> str(caught[0].message)[:80]
    "the ledger no longer covers this trace: it holds group 'posterior' (variable 'od"
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


def value_free_repr[T: type](cls: T) -> T:
    """Class decorator: a dataclass's repr that shows no array value.

    Objects that hold records or values computed from them (links, blocks, exact statistics,
    released tables) are printed by debuggers, logs and error reports. Their repr lists the
    fields as a dataclass's does, but every NumPy array or scalar is shown by its shape and
    dtype, and every PyTensor variable by its type and name (a constant's repr would quote
    its data); tuples, lists, sets and mappings are shown element by element, nested objects
    by their own repr. Apply it above ``@dataclass`` (which would otherwise write its own).
    """

    def __repr__(self) -> str:
        shown = (f for f in dataclasses.fields(self) if f.repr)
        fields = ", ".join(f"{f.name}={_value_free(getattr(self, f.name))}" for f in shown)
        return f"{type(self).__name__}({fields})"

    cls.__repr__ = __repr__
    cls.__repr__.value_free = True
    return cls


def _value_free(value) -> str:
    from collections.abc import Mapping

    from pytensor.graph.basic import Variable

    if isinstance(value, np.ndarray | np.generic):
        return f"<{type(value).__name__} shape={np.shape(value)} dtype={value.dtype}>"
    if isinstance(value, Variable):
        return f"<{type(value).__name__} {value.name!r}>"
    if isinstance(value, Mapping):
        items = ", ".join(f"{_value_free(k)}: {_value_free(v)}" for k, v in value.items())
        return f"{{{items}}}"
    if isinstance(value, tuple | list | set | frozenset):
        items = ", ".join(_value_free(v) for v in value)
        return f"{type(value).__name__}([{items}])"
    return repr(value)
