"""Figures of a (relabelled) naive-Bayes HMM trace, after Foulds et al. (2016) Figs. 3–6.

Each function returns the matplotlib ``Figure`` and, given a ``path``, also writes it as PNG
and closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from pymc_dp.hmm.relabel import modal_states

__all__ = ["plot_emissions", "plot_heldout", "plot_modal_states"]


def _state_colours(n_states: int) -> list:
    return [plt.get_cmap("tab10")(k % 10) for k in range(n_states)]


def plot_modal_states(
    idata: xr.DataTree, path: Path | None, title: str, region_label: str = "region"
) -> Figure:
    """Heat map of each region's most frequent state per time step (cf. Foulds Fig. 4)."""
    modal = modal_states(idata)
    n_states = idata["posterior"].sizes["state"]
    n_regions, n_times = modal.shape
    colours = ListedColormap(_state_colours(n_states))
    height = max(2.5, 0.16 * n_regions + 1.5)
    figure, axis = plt.subplots(figsize=(11, height))
    image = axis.imshow(
        modal.values,
        aspect="auto",
        interpolation="nearest",
        cmap=colours,
        norm=BoundaryNorm(np.arange(n_states + 1) - 0.5, n_states),
    )
    times = list(modal["time"].values)
    ticks = list(range(0, n_times, max(1, n_times // 13)))
    axis.set_xticks(ticks, [times[t] for t in ticks], rotation=45, ha="right", fontsize=8)
    axis.set_yticks(
        range(n_regions), list(modal["region"].values), fontsize=max(4, 9 - n_regions // 20)
    )
    axis.set_xlabel(
        "time step (ISO week)" if str(modal["time"].values[0])[4:6] == "-W" else "time step"
    )
    axis.set_ylabel(region_label)
    colourbar = figure.colorbar(image, ax=axis, ticks=range(n_states), fraction=0.03)
    colourbar.set_label("most frequent state")
    axis.set_title(title)
    return _finish(figure, path)


def plot_emissions(
    idata: xr.DataTree,
    path: Path | None,
    title: str,
    feature_labels: Mapping[str, str] | None = None,
) -> Figure:
    """Posterior mean emission probabilities of every state, one panel per feature (Fig. 5).

    ``feature_labels`` maps a feature's dim name to the panel title (default: the dim name).
    """
    feature_labels = feature_labels or {}
    posterior = idata["posterior"]
    names = [str(n) for n in posterior.data_vars if str(n).startswith("emission_")]
    n_states = posterior.sizes["state"]
    colours = _state_colours(n_states)
    columns = 3
    rows = -(-len(names) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    width = 0.8 / n_states
    for axis, name in zip(axes.ravel(), names, strict=False):
        mean = posterior[name].mean(("chain", "draw"))
        feature = mean.dims[1]
        categories = [str(c) for c in mean[feature].values]
        x = np.arange(len(categories))
        for k in range(n_states):
            axis.bar(
                x + (k - (n_states - 1) / 2) * width,
                mean.isel(state=k),
                width,
                color=colours[k],
                label=f"state {k}",
            )
        axis.set_xticks(x, categories, rotation=40, ha="right", fontsize=8)
        axis.set_ylim(0, 1)
        axis.set_title(feature_labels.get(feature, feature), fontsize=10)
    for axis in axes.ravel()[len(names) :]:
        axis.set_visible(False)
    for axis in axes[:, 0]:
        axis.set_ylabel("P(category | state)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncols=n_states, bbox_to_anchor=(0.5, -0.02))
    figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.04, 1, 0.97))
    return _finish(figure, path)


_METHOD_STYLE = {
    "laplace": {"color": "tab:blue", "marker": "o"},
    "laplace (sum clamp)": {"color": "tab:cyan", "marker": "D", "linestyle": ":"},
    "laplace (noise-aware)": {"color": "tab:green", "marker": "P"},
    "ops (M=10)": {"color": "tab:orange", "marker": "s"},
    "ops (M=100)": {"color": "tab:red", "marker": "^"},
}


def plot_heldout(summary, path: Path | None, title: str) -> Figure:
    """Held-out log-likelihood per record against ε (log axis), one panel per region set × K.

    ``summary`` is :func:`pymc_dp.hmm.evaluation.summarise` output (with a ``regions``
    column); error bars are ± 1 standard error over splits, the dashed line is the
    non-private model (cf. Foulds et al. 2016, Figs. 6 and 9). The y axis fits every method
    but "laplace (sum clamp)", whose worst points fall below the panel. Methods absent from
    ``summary`` are left out of the legend.
    """
    styles = {m: s for m, s in _METHOD_STYLE.items() if m in set(summary["method"])}
    region_sets = list(dict.fromkeys(summary["regions"]))
    ks = sorted(summary["n_states"].unique())
    figure, axes = plt.subplots(
        len(region_sets),
        len(ks),
        figsize=(3.6 * len(ks), 3.2 * len(region_sets)),
        squeeze=False,
        sharex=True,
    )
    for row, regions in enumerate(region_sets):
        for col, k in enumerate(ks):
            axis = axes[row, col]
            panel = summary[(summary["regions"] == regions) & (summary["n_states"] == k)]
            for method, style in styles.items():
                line = panel[panel["method"] == method].sort_values("epsilon")
                axis.errorbar(
                    line["epsilon"],
                    line["heldout_ll"],
                    yerr=line["se"],
                    label=method,
                    capsize=2,
                    **style,
                )
            _focus(axis, panel)
            reference = panel[panel["method"] == "non-private"]["heldout_ll"]
            if len(reference):
                axis.axhline(reference.iloc[0], color="black", linestyle="--", label="non-private")
            axis.set_xscale("log")
            axis.set_title(
                f"{regions}, K = {k}" + (" (naive Bayes)" if k == 1 else ""), fontsize=10
            )
            if col == 0:
                axis.set_ylabel("held-out log-lik. per record")
            if row == len(region_sets) - 1:
                axis.set_xlabel("ε")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="lower center", ncols=len(labels), bbox_to_anchor=(0.5, -0.03)
    )
    figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.03, 1, 0.96))
    return _finish(figure, path)


def _focus(axis, panel) -> None:
    """Scale the y axis to the well-behaved methods; wilder curves may leave the panel."""
    calm = panel[panel["method"] != "laplace (sum clamp)"]
    low = (calm["heldout_ll"] - calm["se"].fillna(0)).min()
    high = (calm["heldout_ll"] + calm["se"].fillna(0)).max()
    margin = 0.08 * (high - low) + 1e-3
    axis.set_ylim(low - margin, high + margin)


def _finish(figure: Figure, path: Path | None) -> Figure:
    if path is not None:
        figure.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(figure)
    return figure
