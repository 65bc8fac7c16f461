"""Relabelling HMM states across chains, and summaries of a (relabelled) HMM trace.

The likelihood is invariant under permutations of the K state labels, so independent chains
settle on different labellings and pooled summaries average unrelated states. Relabelling
is post-processing of the trace (no privacy cost). :func:`relabel_states` matches each
chain's states to chain 0's by their mean emission profiles (minimum total L1 distance,
Hungarian algorithm: ``scipy.optimize.linear_sum_assignment``), then orders the states by
decreasing occupancy in the pooled trace, so state 0 is the most frequent. Label switching
*within* a chain is not undone (with FFBS and informative cells it is rare; check the
per-chain trace plots).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import linear_sum_assignment

from pymc_dp.certificate import certify, still_certified

__all__ = ["emission_profiles", "modal_states", "relabel_states"]

_RELABEL_ATTR = "pymc_dp_relabelled"


def _emission_names(posterior: xr.Dataset) -> list[str]:
    return [name for name in posterior.data_vars if str(name).startswith("emission_")]


def _profiles(posterior: xr.Dataset) -> np.ndarray:
    """Mean emission profile of each chain's states, shape (chain, K, Σ K_d)."""
    parts = [posterior[name].mean("draw").values for name in _emission_names(posterior)]
    return np.concatenate(parts, axis=-1)


def _permute(posterior: xr.Dataset, order: np.ndarray) -> xr.Dataset:
    """Relabel one chain: new state i is old state order[i]."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    updated = {}
    for name in _emission_names(posterior):
        updated[name] = posterior[name].isel(state=order).assign_coords(state=posterior.state)
    rows = np.concatenate([[0], order + 1])
    transition = posterior["transition"].isel(state=order, from_state=rows)
    updated["transition"] = transition.assign_coords(
        state=posterior.state, from_state=posterior.from_state
    )
    updated["states"] = xr.apply_ufunc(lambda z: inverse[z], posterior["states"])
    return posterior.assign(updated)


def relabel_states(idata: xr.DataTree) -> xr.DataTree:
    """Return a copy of an HMM trace with state labels matched across chains.

    Parameters
    ----------
    idata : DataTree
        A trace of :func:`pymc_dp.models.naive_bayes_hmm` (posterior with ``states``,
        ``transition`` and ``emission_*``).

    Returns
    -------
    DataTree
        Same groups; the posterior relabelled; root attribute ``pymc_dp_relabelled`` = 1.
        Certified (:mod:`pymc_dp.certificate`) if ``idata``'s ledger covered all of it.
    """
    posterior = idata["posterior"].to_dataset()
    profiles = _profiles(posterior)
    chains = []
    for c in range(posterior.sizes["chain"]):
        cost = np.abs(profiles[0][:, None, :] - profiles[c][None, :, :]).sum(-1)
        _, order = linear_sum_assignment(cost)
        chains.append(_permute(posterior.isel(chain=[c]), order))
    relabelled = xr.concat(chains, dim="chain")
    n_states = relabelled.sizes["state"]
    occupancy = np.bincount(relabelled["states"].values.ravel(), minlength=n_states)
    relabelled = _permute(relabelled, np.argsort(-occupancy, kind="stable"))
    result = idata.copy()
    result["posterior"] = relabelled.assign_attrs(posterior.attrs)
    result.attrs[_RELABEL_ATTR] = 1
    # a permutation of released draws: covered by the ledger if the input was
    return certify(result) if still_certified(idata) else result


def modal_states(idata: xr.DataTree) -> xr.DataArray:
    """Most frequent state of each cell over all chains and draws, dims (region, time)."""
    states = idata["posterior"]["states"]
    n_states = idata["posterior"].sizes["state"]
    one_hot = (states == xr.DataArray(np.arange(n_states), dims="state")).sum(("chain", "draw"))
    return one_hot.argmax("state").rename("modal_state")


def emission_profiles(idata: xr.DataTree) -> pd.DataFrame:
    """Posterior mean of every state's emission probabilities, one row per (feature, category).

    Columns are the states; a column ``share`` gives each state's fraction of cells.
    """
    posterior = idata["posterior"]
    frames = []
    for name in _emission_names(posterior.to_dataset()):
        mean = posterior[name].mean(("chain", "draw"))
        feature = mean.dims[1]
        frame = mean.transpose(feature, "state").to_pandas()
        frame.index = pd.MultiIndex.from_product(
            [[feature], frame.index], names=["feature", "category"]
        )
        frames.append(frame)
    table = pd.concat(frames)
    table.columns = [f"state {k}" for k in table.columns]
    states = posterior["states"].values.ravel()
    share = np.bincount(states, minlength=posterior.sizes["state"]) / states.size
    table.loc[("(cells)", "share"), :] = share
    return table
