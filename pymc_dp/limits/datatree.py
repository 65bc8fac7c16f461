"""From prior draws to bounds: how far any released posterior could move from the prior.

:func:`from_datatree` reads prior draws (``pm.sample_prior_predictive``'s ``prior`` group),
estimates the prior probability of each stated event, and bounds the posterior probability of
that event after *any* ε-DP release (Thm 6.4, and its odds form), with ε from the run's
ledger. It answers "what could this release possibly tell anyone about these events", before
or after the release, without looking at the release or the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from pymc_dp.ledger import PrivacyLedger
from pymc_dp.limits._common import SOURCE, check_distance, radius
from pymc_dp.limits.bounds import posterior_bounds
from pymc_dp.limits.privacy import EpsilonSource, pure_epsilon

__all__ = ["EventSpec", "from_datatree"]

EventSpec = Callable[[xr.Dataset], Any] | tuple[str, float | None, float | None]
"""An event A of the parameters: a function of the prior draws (an ``xarray.Dataset`` with
dims ``chain``, ``draw``) returning one boolean per draw, or ``(variable, low, high)`` for
low <= variable <= high (None for an open end) of a scalar variable."""

_SAMPLE_DIMS = ("chain", "draw")


_RECORD_GROUPS = ("observed_data", "constant_data")
"""Groups that hold the records themselves (PyMC's copies of observed values and data)."""


def _group(idata: Any, group: str) -> xr.Dataset:
    if group in _RECORD_GROUPS:
        raise ValueError(
            f"group {group!r} holds the records, not prior draws: the limits are computed "
            "from the prior alone (pass the 'prior' group of pm.sample_prior_predictive)"
        )
    if isinstance(idata, xr.Dataset):
        return _with_sample_dims(idata)
    if isinstance(idata, xr.DataTree):
        if group not in idata.children:
            raise ValueError(
                f"the DataTree has no {group!r} group (it has {sorted(idata.children)}): pass "
                "the result of pm.sample_prior_predictive, or add its prior group"
            )
        return _with_sample_dims(idata[group].to_dataset())
    raise ValueError(f"idata must be an xarray.DataTree or Dataset, got {type(idata).__name__}")


def _with_sample_dims(draws: xr.Dataset) -> xr.Dataset:
    """Prior draws have PyMC's ``chain`` and ``draw`` dimensions (a dataset without them,
    such as the records, is not a sample of the prior)."""
    missing = [d for d in _SAMPLE_DIMS if d not in draws.dims]
    if missing:
        raise ValueError(
            f"the prior draws have no {missing} dimension(s): pass the prior group of "
            "pm.sample_prior_predictive (dimensions 'chain' and 'draw')"
        )
    return draws


def _indicator(name: str, spec: EventSpec, draws: xr.Dataset) -> np.ndarray:
    if callable(spec):
        result = spec(draws)
    elif isinstance(spec, tuple) and len(spec) == 3:
        variable, low, high = spec
        if variable not in draws.data_vars:
            raise ValueError(f"event {name!r}: no variable {variable!r} in the prior draws")
        values = draws[variable]
        result = xr.ones_like(values, dtype=bool)
        if low is not None:
            result = result & (values >= low)
        if high is not None:
            result = result & (values <= high)
    else:
        raise ValueError(
            f"event {name!r} must be a function of the prior draws or a tuple (variable, low, high)"
        )
    if isinstance(result, xr.DataArray):
        extra = [d for d in result.dims if d not in _SAMPLE_DIMS]
        if extra:
            raise ValueError(
                f"event {name!r} gives one value per draw and per {extra}: an event must be "
                "one yes/no per draw (reduce over those dims, e.g. with .any() or .all())"
            )
        result = result.transpose(*[d for d in _SAMPLE_DIMS if d in result.dims]).values
    array = np.asarray(result)
    expected = tuple(draws.sizes[d] for d in _SAMPLE_DIMS if d in draws.sizes)
    if array.dtype != bool:
        raise ValueError(f"event {name!r} must give booleans, got dtype {array.dtype}")
    if array.size != math.prod(expected):
        raise ValueError(
            f"event {name!r} gives {array.size} values for {math.prod(expected)} draws"
        )
    return array.ravel()


def from_datatree(
    idata: xr.DataTree | xr.Dataset,
    events: Mapping[str, EventSpec],
    *,
    distance: float,
    epsilon: EpsilonSource | None = None,
    group: str = "prior",
) -> xr.Dataset:
    """Bounds on the posterior probability of events after any ε-DP release, from prior draws.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §6 Thm 6.4, eq. 12: every posterior given an ε-DP release satisfies
    e^{-εΔ} Π(A) <= Π(A | t) <= e^{εΔ} Π(A) (clipped to [0, 1]), whatever the data model;
    and, [DERIVED] from the same step, posterior odds within e^{±εΔ} of prior odds (the
    ``*_sharp`` variables, never wider). Π(A) is estimated by the fraction of prior draws in
    A. The bounds say how far *any* posterior could possibly move from the prior; a real
    posterior usually moves far less (Example 6.7), so they are not a credible interval.

    Parameters
    ----------
    idata : xarray.DataTree or xarray.Dataset
        Prior draws: the DataTree of ``pm.sample_prior_predictive`` (group ``group``) or the
        draws themselves. Draws must be independent (prior predictive sampling is) for the
        Monte Carlo standard error to be right.
    events : mapping of str to event
        Named events A: a function of the draws (an ``xarray.Dataset``) returning one
        boolean per draw, or ``(variable, low, high)`` for low <= variable <= high
        (None for an open end).
    distance : float
        Δ in records, in the metric of the release (:func:`pymc_dp.limits.data_diameter`):
        1 for an attacker on one record, n for an analyst of n records (Hamming);
        ``math.inf`` gives [0, 1].
    epsilon : float, PrivacyLedger or xarray.DataTree, optional
        Pure ε, or the ledger / trace of the release. Default: the ledger carried by
        ``idata`` itself (a DataTree with a ``privacy_ledger``).
    group : str
        The group of ``idata`` that holds the prior draws.

    Returns
    -------
    xarray.Dataset
        Dimension ``event`` (the names of ``events``), variables ``prior_probability``
        (Π(A), fraction of draws), ``prior_probability_mcse`` (its Monte Carlo standard
        error, √(Π(1 − Π)/N)), ``lower``, ``upper`` (Thm 6.4) and ``lower_sharp``,
        ``upper_sharp`` (odds form); attributes ``epsilon``, ``delta`` (0), ``distance``,
        ``radius`` (εΔ), ``draws`` and ``source``.

    Raises
    ------
    ValueError
        If no ε is given and ``idata`` carries no ledger; if the ledger has δ > 0; if an
        event is not one boolean per draw or names an unknown variable; if ``events`` is
        empty or Δ is invalid.
    """
    if not events:
        raise ValueError("events is empty: name at least one event of the parameters")
    source = epsilon
    if source is None:
        if not isinstance(idata, xr.DataTree):
            raise ValueError("pass epsilon (a number, ledger or trace): a Dataset has no ledger")
        source = idata
    eps = pure_epsilon(source)
    delta_records = check_distance(distance)
    draws = _group(idata, group)
    names = list(events)
    indicators = np.stack([_indicator(name, events[name], draws) for name in names])
    count = indicators.shape[1]
    prior = indicators.mean(axis=1)
    mcse = np.sqrt(prior * (1.0 - prior) / count)
    paper = posterior_bounds(prior, eps, delta_records)
    sharp = posterior_bounds(prior, eps, delta_records, sharp=True)
    coords = {"event": names}
    return xr.Dataset(
        {
            "prior_probability": ("event", prior),
            "prior_probability_mcse": ("event", mcse),
            "lower": ("event", np.asarray(paper.lower)),
            "upper": ("event", np.asarray(paper.upper)),
            "lower_sharp": ("event", np.asarray(sharp.lower)),
            "upper_sharp": ("event", np.asarray(sharp.upper)),
        },
        coords=coords,
        attrs={
            "epsilon": eps,
            "delta": 0.0,
            "distance": delta_records,
            "radius": radius(eps, delta_records),
            "draws": int(count),
            "ledger": "yes" if isinstance(source, PrivacyLedger | xr.DataTree) else "no",
            "source": f"{SOURCE}, §6 Thm 6.4, eq. 12 (lower/upper); odds form [DERIVED] "
            "(lower_sharp/upper_sharp)",
        },
    )
