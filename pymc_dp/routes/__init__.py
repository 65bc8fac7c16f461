"""The one table of routes behind :func:`pymc_dp.sample`.

A route is chosen by the model's kind (:func:`pymc_dp.analysis.model_kind`) and the
mechanism. Every route follows one order: analyse and refuse
(:func:`pymc_dp.analysis.recognise`) → validate records (recogniser) → check the budget →
record the event → release → sample → strip (:mod:`pymc_dp.traces`).

============  =====================================  ======================================
kind          mechanisms                             route
============  =====================================  ======================================
conjugate     laplace                                :func:`~pymc_dp.routes.laplace.run_laplace`
tempered      ops, gibbs-exponential, metropolis     :func:`~pymc_dp.routes.tempered.run_tempered`
hmm           laplace, ops, gibbs-exponential        :func:`~pymc_dp.routes.hmm.run_hmm`
dirichlet     dirichlet-lsdim, dirichlet-lshist,     :func:`~pymc_dp.routes.dirichlet.run_dirichlet`
              dirichlet-ehd, dirichlet-ehds
============  =====================================  ======================================
"""

from __future__ import annotations

from collections.abc import Callable

import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.dirichlet import DIRICHLET_MECHANISMS, run_dirichlet
from pymc_dp.routes.hmm import HMM_MECHANISMS, run_hmm
from pymc_dp.routes.laplace import run_laplace
from pymc_dp.routes.tempered import TEMPERED_MECHANISMS, run_tempered

__all__ = ["MECHANISMS", "ROUTES", "Route", "RunRequest", "route_for"]

Route = Callable[[RunRequest, Recognised], xr.DataTree]

ROUTES: dict[tuple[str, str], Route] = {
    ("conjugate", "laplace"): run_laplace,
    **{("tempered", mechanism): run_tempered for mechanism in TEMPERED_MECHANISMS},
    **{("hmm", mechanism): run_hmm for mechanism in HMM_MECHANISMS},
    **{("dirichlet", mechanism): run_dirichlet for mechanism in DIRICHLET_MECHANISMS},
}
"""(model kind, mechanism) → the route that runs it."""

MECHANISMS: tuple[str, ...] = ("laplace", *TEMPERED_MECHANISMS, *DIRICHLET_MECHANISMS)
"""Every mechanism name, as the API and the ledger spell it."""


def route_for(kind: str, mechanism: str) -> Route:
    """The route for ``(kind, mechanism)``.

    Raises
    ------
    ValueError
        If no route handles that mechanism for that kind of model.
    """
    try:
        return ROUTES[kind, mechanism]
    except KeyError:
        offered = sorted(m for k, m in ROUTES if k == kind)
        raise ValueError(
            f"mechanism={mechanism!r} is not offered for a {kind} model; use one of {offered}"
        ) from None
