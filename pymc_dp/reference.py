"""The exact, **non-private** conjugate posterior of a model, for comparison only.

It reads the raw data. Use it as the data holder's yardstick for what privacy costs in
accuracy; never publish it.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext
from pytensor.graph.traversal import ancestors

from pymc_dp.analysis.conjugate import analyse_model
from pymc_dp.families.base import ConjugateLink
from pymc_dp.mechanisms.statistics import sufficient_statistics

__all__ = ["NONPRIVATE_HEADING", "exact_conjugate_posterior"]

NONPRIVATE_HEADING = "NON-PRIVATE — data holder only, do not publish"
"""Heading of any output that shows this module's results (see ``pymc-dp stops
--nonprivate-comparison``): files that hold them carry ``NONPRIVATE`` in their name."""


def exact_conjugate_posterior(
    model: pm.Model | None = None,
    draws: int = 1000,
    chains: int = 2,
    rng: np.random.Generator | None = None,
) -> xr.DataTree:
    """Independent draws from the exact conjugate posterior given the *raw* statistics.

    NOT PRIVATE: reads the raw records. Supports the models :func:`pymc_dp.sample` supports,
    with constant prior parameters (Foulds et al. 2016, eq. 11 with S(X) in place of Ŝ(X)).

    Returns
    -------
    xarray.DataTree
        Group ``posterior`` with the conjugate variables, shape (chains, draws, ...), with the
        model's dims and coords.

    Raises
    ------
    ValueError
        If a conjugate prior has random parameters, or a likelihood is not a conjugate pair
        (a bounded family's, e.g. counts read per cell of group labels).
    """
    model = modelcontext(model)
    rng = np.random.default_rng(rng)
    links = analyse_model(model)
    other = sorted(name for name, link in links.items() if not isinstance(link, ConjugateLink))
    if other:
        raise ValueError(f"{other}: no exact conjugate posterior (not a Beta/Dirichlet pair)")
    shapes = model.eval_rv_shapes()
    posterior = {}
    for prior in sorted({link.prior for link in links.values()}):
        rv = model[prior]
        params = rv.owner.op.dist_params(rv.owner)
        random = set(model.free_RVs)
        if any(a in random for a in ancestors(params)):
            raise ValueError(f"{prior}: exact posterior needs constant prior parameters")
        values = [np.asarray(p.eval(), dtype=np.float64) for p in params]
        table = sum(sufficient_statistics(link) for link in links.values() if link.prior == prior)
        family = next(link.family for link in links.values() if link.prior == prior)
        param_shape = table.shape if family.prior == "dirichlet" else table.shape[:1]
        values = tuple(np.broadcast_to(v, param_shape) for v in values)
        shape = tuple(int(s) for s in shapes[rv.name])
        samples = [
            family.posterior_draw(rng, values, table).reshape(shape) for _ in range(chains * draws)
        ]
        posterior[prior] = np.asarray(samples).reshape(chains, draws, *shape)
    dims = {name: list(model.named_vars_to_dims.get(name) or ()) for name in posterior}
    coords = {k: list(v) for k, v in model.coords.items() if v is not None}
    return az.from_dict({"posterior": posterior}, dims=dims, coords=coords)
