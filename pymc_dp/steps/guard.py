"""Private steps run only inside a :func:`pymc_dp.sample` route.

A private step handed to ``pm.sample`` directly, on a model that still holds raw records,
would let ``pm.sample`` copy them into the trace's ``observed_data`` group (and let PyMC's
other samplers read them), and would release draws that no ledger charged. Routes construct
and run steps inside :func:`route_context`.

* :class:`~pymc_dp.PrivateConjugateGibbs` built outside a route refuses to step on a model
  with observed variables (:func:`sanctioned`); on a private model of released statistics its
  draws are post-processing.
* :class:`~pymc_dp.TemperedConjugateGibbs` and :class:`~pymc_dp.PrivateMetropolis` always
  read exact private data (the statistics the step computed, a likelihood written as a
  ``pm.Potential`` …), whatever model they are built on: they step only when built inside a
  route (:func:`in_route`).
* :class:`~pymc_dp.NaiveBayesHMMGibbs` steps outside a route only on counts returned by
  :func:`pymc_dp.hmm.release_cell_counts` (which carry the release's ledger event).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pymc_dp.errors import NonPrivateModelError

__all__ = ["check_route", "in_route", "route_context", "sanctioned"]

_ROUTE_ACTIVE: ContextVar[bool] = ContextVar("pymc_dp_route_active", default=False)

_HOW_TO_RUN = {
    "PrivateConjugateGibbs": (
        "Pass the step to pymc_dp.sample(step=...), or call "
        "pymc_dp.sample(mechanism='laplace') on the model"
    ),
    "TemperedConjugateGibbs": (
        "Run it through pymc_dp.sample(mechanism='ops' | 'gibbs-exponential'), which sets "
        "the temperature from epsilon and charges the ledger"
    ),
    "PrivateMetropolis": (
        "Run it through pymc_dp.sample(mechanism='metropolis', proposal_scale=...), which "
        "tempers the model and charges the ledger"
    ),
    "NaiveBayesHMMGibbs": (
        "Run it through pymc_dp.sample(mechanism='laplace' | 'ops' | 'gibbs-exponential'), or "
        "release the counts with pymc_dp.hmm.release_cell_counts and build the model on the "
        "counts it returns (their draws are post-processing)"
    ),
}
_WHY = {
    "PrivateConjugateGibbs": (
        "was built on a model that still holds raw records and is being run by pm.sample "
        "directly: pm.sample would copy the records into the trace's observed_data group and "
        "charge nothing for the draws."
    ),
    "TemperedConjugateGibbs": (
        "was built outside pymc_dp.sample: it samples from exact private statistics, so "
        "pm.sample would release draws (at a temperature nobody charged for) with no ledger "
        "event, whatever model it runs in, and copy any records of the model into the "
        "trace's observed_data group."
    ),
    "PrivateMetropolis": (
        "was built outside pymc_dp.sample: it samples whatever density the model defines "
        "(a likelihood, or a pm.Potential over records) with no temperature set from epsilon "
        "and no ledger event, and pm.sample would copy any records into the trace's "
        "observed_data group."
    ),
    "NaiveBayesHMMGibbs": (
        "was built on counts that were not returned by release_cell_counts (raw counts, or "
        "counts merely marked noisy) and is being run by pm.sample directly: its draws would "
        "read unreleased counts, charge nothing, and pm.sample would copy the counts into the "
        "trace's observed_data group."
    ),
}


@contextmanager
def route_context() -> Iterator[None]:
    """Mark steps constructed inside this block as run by a ``pymc_dp.sample`` route."""
    token = _ROUTE_ACTIVE.set(True)
    try:
        yield
    finally:
        _ROUTE_ACTIVE.reset(token)


def in_route() -> bool:
    """True inside :func:`route_context` (a step being built by a ``pymc_dp.sample`` route)."""
    return _ROUTE_ACTIVE.get()


def sanctioned(holds_records: bool) -> bool:
    """True when a step may step: built by a route, or its model holds no raw records (a
    private model of released statistics, or a data-free model)."""
    return in_route() or not holds_records


def check_route(step) -> None:
    """Raise if ``step`` was not sanctioned when it was built (see the module docstring).

    A step without a ``_sanctioned`` attribute is refused (it was not built by its
    ``__init__``).

    Raises
    ------
    NonPrivateModelError
    """
    if getattr(step, "_sanctioned", False) is not True:
        name = type(step).__name__
        why = _WHY.get(name, "was built outside pymc_dp.sample and is being run by pm.sample.")
        how = _HOW_TO_RUN.get(name, "Run it through pymc_dp.sample")
        raise NonPrivateModelError(f"{name} {why} {how}. Nothing was sampled.")
