"""Moved to :mod:`pymc_dp.families.bounds`; re-exported here for one release.

The log-likelihood bounds Δ are now named ``*_log_likelihood_bound`` (``delta`` is reserved for
the δ of (ε, δ)-DP). The old ``*_delta`` names still work here, for one release only, and emit
a :class:`DeprecationWarning` when called.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from pymc_dp.families.bounds import __all__ as _BOUNDS
from pymc_dp.families.bounds import (
    bernoulli_log_likelihood_bound,
    binomial_log_likelihood_bound,
    categorical_log_likelihood_bound,
    multinomial_log_likelihood_bound,
    normal_log_likelihood_bound,
    poisson_log_likelihood_bound,
    private_trials_log_likelihood_bound,
)


def _deprecated(function: Callable[..., float], old_name: str) -> Callable[..., float]:
    @functools.wraps(function)
    def alias(*args, **kwargs):
        warnings.warn(
            f"pymc_dp.likelihood_bounds.{old_name} is deprecated and will be removed in the "
            f"next release; use pymc_dp.families.bounds.{function.__name__}",
            DeprecationWarning,
            stacklevel=2,
        )
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated alias of :func:`pymc_dp.families.bounds.{function.__name__}`."
    return alias


bernoulli_delta = _deprecated(bernoulli_log_likelihood_bound, "bernoulli_delta")
binomial_delta = _deprecated(binomial_log_likelihood_bound, "binomial_delta")
categorical_delta = _deprecated(categorical_log_likelihood_bound, "categorical_delta")
multinomial_delta = _deprecated(multinomial_log_likelihood_bound, "multinomial_delta")
normal_delta = _deprecated(normal_log_likelihood_bound, "normal_delta")
poisson_delta = _deprecated(poisson_log_likelihood_bound, "poisson_delta")
private_trials_delta = _deprecated(private_trials_log_likelihood_bound, "private_trials_delta")

__all__ = [
    *_BOUNDS,
    "bernoulli_delta",
    "binomial_delta",
    "categorical_delta",
    "multinomial_delta",
    "normal_delta",
    "poisson_delta",
    "private_trials_delta",
]
