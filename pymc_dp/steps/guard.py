"""Private steps run only inside a :func:`pymc_dp.sample` route.

A private step handed to ``pm.sample`` directly, on a model that still holds raw records,
would let ``pm.sample`` copy them into the trace's ``observed_data`` group (and let PyMC's
other samplers read them), and would release draws that no ledger charged. Routes construct
and run steps inside :func:`route_context`; a step built outside it on a model with observed
variables refuses to take a step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pymc_dp.errors import NonPrivateModelError

__all__ = ["check_route", "route_context", "sanctioned"]

_ROUTE_ACTIVE: ContextVar[bool] = ContextVar("pymc_dp_route_active", default=False)


@contextmanager
def route_context() -> Iterator[None]:
    """Mark steps constructed inside this block as run by a ``pymc_dp.sample`` route."""
    token = _ROUTE_ACTIVE.set(True)
    try:
        yield
    finally:
        _ROUTE_ACTIVE.reset(token)


def sanctioned(holds_records: bool) -> bool:
    """True when a step may step: built by a route, or its model holds no raw records (a
    private model of released statistics, or a data-free model)."""
    return _ROUTE_ACTIVE.get() or not holds_records


def check_route(step) -> None:
    """Raise if ``step`` was built outside a route on a model with raw records.

    Raises
    ------
    NonPrivateModelError
    """
    if not getattr(step, "_sanctioned", True):
        raise NonPrivateModelError(
            f"{type(step).__name__} was built on a model that still holds raw records and is "
            "being run by pm.sample directly: pm.sample would copy the records into the "
            "trace's observed_data group and charge nothing for the draws. Pass the step to "
            "pymc_dp.sample(step=...) (PrivateConjugateGibbs), or call pymc_dp.sample with "
            "the mechanism you want. Nothing was sampled."
        )
