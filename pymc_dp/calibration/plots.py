"""The calibration figure: coverage of central intervals against n, per family and ε."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["plot_calibration"]

_STYLE = {
    "non-private": {"color": "0.35", "linestyle": "--", "marker": "s"},
    "plugin": {"color": "tab:red", "marker": "v"},
    "noise-aware": {"color": "tab:blue", "marker": "o"},
}


def plot_calibration(
    table: pd.DataFrame,
    path: Path | None = None,
    *,
    level: float = 0.9,
    band: tuple[float, float] = (0.88, 0.92),
) -> Figure:
    """Coverage of the central ``level`` intervals against n (log axis).

    One row of panels per (family, parameter), one column per ε; a line per method with
    ±2 standard-error bars; the grey band is the target ``band``, the dotted line ``level``.
    ``table`` is :func:`pymc_dp.calibration.coverage_table` output. Saved to ``path`` when
    given.
    """
    rows = list(dict.fromkeys(zip(table["family"], table["parameter"], strict=True)))
    epsilons = sorted(table["epsilon"].unique())
    figure, axes = plt.subplots(
        len(rows),
        len(epsilons),
        figsize=(3.8 * len(epsilons), 2.4 * len(rows)),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for i, (family, parameter) in enumerate(rows):
        for j, epsilon in enumerate(epsilons):
            axis = axes[i, j]
            cell = table[
                (table["family"] == family)
                & (table["parameter"] == parameter)
                & (table["epsilon"] == epsilon)
            ]
            axis.axhspan(*band, color="0.9", zorder=0)
            axis.axhline(level, color="0.5", linestyle=":", linewidth=1)
            for method, style in _STYLE.items():
                line = cell[cell["method"] == method].sort_values("n")
                if line.empty:
                    continue
                axis.errorbar(
                    line["n"],
                    line["coverage"],
                    yerr=2 * line["coverage_se"],
                    label=method,
                    capsize=2,
                    markersize=4,
                    **style,
                )
            axis.set_xscale("log")
            axis.set_ylim(0.0, 1.0)
            if i == 0:
                axis.set_title(f"ε = {epsilon:g}")
            if j == 0:
                axis.set_ylabel(f"{family}\n{parameter}\ncoverage", fontsize=8)
            if i == len(rows) - 1:
                axis.set_xlabel("n (records)")
    axes[0, -1].legend(loc="lower right", fontsize=7)
    figure.suptitle(f"Coverage of central {level:.0%} intervals (target band shaded)")
    figure.tight_layout(rect=(0.03, 0, 1, 0.985))
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure
