"""A privacy report of a private trace: what was spent, what was released, what it cost.

:func:`pymc_dp.report` reads only the trace (its ledger, its released statistics and its posterior:
all released or post-processing), and optionally the table of :func:`pymc_dp.plan`, and gives
a :class:`PrivacyReport`: four tables, a figure and an HTML fragment that renders in Jupyter
and in the docs. ``pymc-dp report TRACE.nc`` writes the figure (and the HTML) from a saved
trace.
"""

from __future__ import annotations

import html
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pymc_dp.certificate import uncertified, uncertified_items
from pymc_dp.errors import UncertifiedTraceWarning
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.limits import posterior_bounds
from pymc_dp.traces import RELEASED_GROUP

__all__ = ["PRIOR_PROBABILITIES", "PrivacyReport", "report"]

PRIOR_PROBABILITIES: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5)
"""Prior probabilities of a property of one record at which the report states the limits."""
_MAX_POINTS = 60  # released components or parameter elements drawn in one panel
_NOISE_SD = {"laplace": math.sqrt(2.0), "gaussian": 1.0}  # sd per unit of noise_scale


@dataclass(eq=False)
class PrivacyReport:
    """What a private trace spent, released and cost, as tables, a figure and HTML.

    Attributes
    ----------
    ledger : PrivacyLedger
        The trace's ledger (:meth:`~pymc_dp.PrivacyLedger.to_dataframe` is its table).
    statistics : pandas.DataFrame
        One row per released variable: ``released`` (the group's variable), ``components``,
        ``mechanism``, ``epsilon``, ``noise_sd`` (standard deviation of the noise on each
        component: √2·b for Laplace of scale b, σ for Gaussian), ``statistic``.
    widths : pandas.DataFrame
        One row per parameter element: ``width_private`` (central interval of the trace's
        posterior) and, with a plan, ``width_private_expected`` and
        ``width_nonprivate_expected`` at the plan's ε nearest the trace's.
    limits : pandas.DataFrame or None
        What the ε promises about any reader (Bailie & Gong, Thm 6.4, odds form): for a
        property of one record with prior probability ``prior`` (rows), the largest and
        smallest posterior probability anyone can reach from the release (``upper``,
        ``lower``). None when the ledger's δ > 0 (no such bound follows from (ε, δ)-DP).
    interval : float
        Probability of the central intervals.
    """

    ledger: PrivacyLedger
    statistics: pd.DataFrame
    widths: pd.DataFrame
    limits: pd.DataFrame | None
    interval: float = 0.9
    notes: list[str] = field(default_factory=list)

    def figure(self):
        """A matplotlib figure with four panels: ε spent per release (with the budget), the
        released values with ±2 noise sds, the interval widths (private, and the plan's
        expectations), and the limits on any reader's posterior."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), layout="constrained")
        self._spent(axes[0, 0])
        self._released(axes[0, 1])
        self._widths(axes[1, 0])
        self._limits(axes[1, 1])
        guarantee = "" if self.ledger.guaranteed else " — NOT A GUARANTEE (see the ledger)"
        if self.notes:
            guarantee += "\nUNCOVERED CONTENT left out: the ledger does not cover all of this trace"
        fig.suptitle(
            f"Privacy report: ε = {self.ledger.epsilon:g}, δ = {self.ledger.delta:g}, "
            f"{len(self.ledger)} release(s){guarantee}",
            fontsize=13,
        )
        return fig

    def savefig(self, path: str | Path, **kwargs) -> Path:
        """Write :meth:`figure` to ``path`` (PNG, PDF, SVG, … by suffix); returns the path."""
        import matplotlib.pyplot as plt

        fig = self.figure()
        try:
            fig.savefig(path, dpi=kwargs.pop("dpi", 120), **kwargs)
        finally:
            plt.close(fig)
        return Path(path)

    def to_html(self) -> str:
        """The report as an HTML fragment (tables only, escaped): the ledger, the released
        statistics, the widths and the limits."""
        parts = ["<div class='pymc-dp-report'>", "<h4>Privacy ledger</h4>"]
        parts.append(self.ledger._repr_html_())
        for warning in self.notes:
            parts.append(f"<p><strong>Warning:</strong> {html.escape(warning)}</p>")
        parts.append("<h4>Released statistics</h4>")
        parts.append(_html_table(self.statistics))
        parts.append(f"<h4>Central {self.interval:.0%} interval widths</h4>")
        parts.append(_html_table(self.widths))
        parts.append("<h4>What the release lets anyone infer about one record</h4>")
        if self.limits is None:
            parts.append(
                "<p>None stated: the ledger's δ > 0 (no limit follows from (ε, δ)-DP).</p>"
            )
        else:
            parts.append(
                "<p>For a property of one record (Bailie &amp; Gong, Thm 6.4, odds form, "
                "Δ = 1): whatever model and prior a reader holds, the release moves their "
                "probability of it at most to these bounds.</p>"
            )
            parts.append(_html_table(self.limits))
        parts.append("</div>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        return self.to_html()

    # --- panels -----------------------------------------------------------------------------

    def _spent(self, ax) -> None:
        events = self.ledger.events
        labels = [f"{e.mechanism}: {', '.join(e.variables)}" for e in events]
        ax.barh(range(len(events)), [e.epsilon for e in events], color="tab:blue")
        ax.set_yticks(range(len(events)), labels)
        ax.invert_yaxis()
        ax.set_xlabel("ε spent")
        if self.ledger.budget is not None:
            ax.axvline(self.ledger.budget[0], color="tab:red", linestyle="--", label="budget ε")
            ax.legend(loc="lower right")
        ax.set_title(f"Privacy spent per release (total ε = {self.ledger.epsilon:g})")

    def _released(self, ax) -> None:
        rows = []
        for row in self.statistics.itertuples():
            for label, v in zip(row.labels, np.ravel(row.values), strict=True):
                rows.append((label, v, row.noise_sd))
        rows = rows[:_MAX_POINTS]
        if not rows:
            ax.text(0.5, 0.5, "no released statistics in this trace", ha="center", va="center")
            ax.set_axis_off()
            return
        names, values, sds = zip(*rows, strict=True)
        position = np.arange(len(rows))
        ax.errorbar(
            values,
            position,
            xerr=2 * np.asarray(sds, float),
            fmt="o",
            color="tab:orange",
            ecolor="tab:gray",
            capsize=2,
        )
        ax.set_yticks(position, names, fontsize=8 if len(rows) > 15 else 10)
        ax.invert_yaxis()
        ax.set_xlabel("released value ± 2 noise sd")
        ax.set_title("Released statistics and their noise")

    def _widths(self, ax) -> None:
        table = self.widths.head(_MAX_POINTS)
        position = np.arange(len(table))
        ax.scatter(table["width_private"], position, color="tab:blue", label="private (this trace)")
        if "width_private_expected" in table:
            ax.scatter(
                table["width_private_expected"],
                position,
                marker="|",
                s=200,
                color="tab:blue",
                label="private, planned",
            )
            ax.scatter(
                table["width_nonprivate_expected"],
                position,
                marker="x",
                color="tab:green",
                label="non-private, planned",
            )
        ax.set_yticks(position, table["parameter"], fontsize=8 if len(table) > 15 else 10)
        ax.invert_yaxis()
        shown = table.drop(columns="parameter").to_numpy(dtype=float)
        shown = shown[np.isfinite(shown) & (shown > 0)]
        if shown.size and shown.max() > 20 * shown.min():  # one wide interval hides the rest
            ax.set_xscale("log")
        else:
            ax.set_xlim(left=0)
        ax.set_xlabel(f"width of the central {self.interval:.0%} interval")
        ax.set_title("What privacy cost in precision")
        ax.legend(loc="upper right", fontsize=9)

    def _limits(self, ax) -> None:
        ax.set_title("What the release lets anyone infer about one record")
        if self.limits is None:
            ax.text(
                0.5,
                0.5,
                "no limit stated: δ > 0\n(Bailie & Gong's limits need pure ε)",
                ha="center",
                va="center",
            )
            ax.set_axis_off()
            return
        prior = np.linspace(0.0, 1.0, 201)
        lower, upper = posterior_bounds(prior, self.ledger.epsilon, 1.0, sharp=True)
        ax.plot(prior, prior, color="black", linewidth=0.8, label="no release")
        ax.fill_between(
            prior,
            lower,
            upper,
            color="tab:purple",
            alpha=0.3,
            label=f"reachable, ε = {self.ledger.epsilon:g}",
        )
        ax.set_xlabel("a reader's prior probability of a property of one record")
        ax.set_ylabel("their posterior probability after the release")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left", fontsize=9)


def report(
    idata: xr.DataTree, *, plan: pd.DataFrame | None = None, interval: float = 0.9
) -> PrivacyReport:
    """The privacy report of a trace from :func:`pymc_dp.sample`.

    Reads only the trace — its ledger, its ``released_statistics`` and its ``posterior`` —
    and, if given, a :func:`pymc_dp.plan` table of the same model: post-processing, free.

    Parameters
    ----------
    idata : xarray.DataTree
        A private trace (it must carry a ledger).
    plan : pandas.DataFrame, optional
        :func:`pymc_dp.plan`'s table: the expected private and non-private widths at the plan's
        ε nearest the trace's total are shown beside the trace's.
    interval : float
        Probability of the central intervals (default 0.9, as the planner's).

    Returns
    -------
    PrivacyReport
        ``.figure()``, ``.savefig(path)``, ``.to_html()`` (and Jupyter's view), and the
        tables ``ledger``, ``statistics``, ``widths``, ``limits``.

    Raises
    ------
    KeyError
        If the trace carries no ledger.
    ValueError
        If ``interval`` is not in (0, 1).

    Warns
    -----
    UncertifiedTraceWarning
        If the trace holds content its ledger does not cover. That content is left out of the
        tables and the figure (all of it for a trace with no certificate), and the figure's
        title and the HTML say so.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=500)  # private 0/1 records
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    ...     idata = pymc_dp.sample(200, tune=100, chains=1, epsilon=0.5, progressbar=False)
    >>> summary = pymc_dp.report(idata)
    >>> summary.statistics[["released", "components", "mechanism", "epsilon"]]
      released  components mechanism  epsilon
    0        y           1   laplace      0.5
    >>> round(float(summary.statistics["noise_sd"].iloc[0]), 3)  # √2 · (Δ = 1) / 0.5
    2.828
    >>> summary.limits.loc[summary.limits["prior"] == 0.1, "upper"].round(3).item()
    0.155
    >>> path = summary.savefig("report.png")
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must be in (0, 1), got {interval!r}")
    notes = [f"the trace holds {item}" for item in uncertified(idata)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedTraceWarning)
        ledger = PrivacyLedger.from_datatree(idata)
    if notes:
        warnings.warn(
            "the ledger does not cover all of this trace: " + "; ".join(notes),
            UncertifiedTraceWarning,
            stacklevel=2,
        )
    # what the certificate does not cover is left out (a trace without one: everything)
    uncovered = uncertified_items(idata)

    def covered(group: str, variable: xr.DataArray) -> bool:
        """The variable, its group's attributes and every coordinate it is labelled by (its
        group's or the root's) are certified."""
        if uncovered is None:
            return False
        paths = {f"/{group}", f"/{group}/{variable.name}"}
        for name in variable.coords:
            paths |= {f"/{group}/{name}", f"/{name}"}
        return not paths & uncovered

    return PrivacyReport(
        ledger=ledger,
        statistics=_statistics(idata, ledger, covered),
        widths=_trace_widths(idata, interval, plan, ledger.epsilon, covered),
        limits=_limits(ledger),
        interval=float(interval),
        notes=notes,
    )


def _statistics(idata: xr.DataTree, ledger: PrivacyLedger, covered) -> pd.DataFrame:
    columns = [
        "released",
        "components",
        "mechanism",
        "epsilon",
        "noise_sd",
        "statistic",
        "values",
        "labels",
    ]
    if RELEASED_GROUP not in idata.children:
        return pd.DataFrame(columns=columns)
    group = idata[RELEASED_GROUP].to_dataset()
    rows = []
    for name in group.data_vars:
        if str(name).endswith("_projected") or not covered(RELEASED_GROUP, group[name]):
            continue
        events = [e for e in ledger.events if name in e.variables and e.noise_scale is not None]
        sds = sorted({_NOISE_SD.get(e.mechanism, math.nan) * e.noise_scale for e in events})
        rows.append(
            {
                "released": str(name),
                "components": int(group[name].size),
                "mechanism": ", ".join(sorted({e.mechanism for e in events})) or "-",
                "epsilon": sum(e.epsilon for e in events),
                "noise_sd": sds[0] if len(sds) == 1 else (max(sds) if sds else math.nan),
                "statistic": "; ".join(e.statistic for e in events),
                "values": np.asarray(group[name].values, dtype=float),
                "labels": _element_labels(group[name], str(name)),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def _element_labels(variable: xr.DataArray, name: str) -> list[str]:
    """``name[coordinate, …]`` for every element (positions on dims without coordinates)."""
    if not variable.dims:
        return [name]
    coords = [
        list(variable[d].values) if d in variable.coords else list(range(variable.sizes[d]))
        for d in variable.dims
    ]
    return [
        f"{name}[{', '.join(str(c[i]) for c, i in zip(coords, index, strict=True))}]"
        for index in np.ndindex(*variable.shape)
    ]


def _trace_widths(idata, interval, plan, epsilon, covered) -> pd.DataFrame:
    if "posterior" not in idata.children:
        return pd.DataFrame(columns=["parameter", "width_private"])
    posterior = idata["posterior"].to_dataset()
    low, high = (1 - interval) / 2, (1 + interval) / 2
    rows = []
    for name, variable in posterior.data_vars.items():
        if not covered("posterior", variable):
            continue
        extra = [d for d in variable.dims if d not in ("chain", "draw")]
        stacked = variable.stack(sample=("chain", "draw")).transpose("sample", *extra)
        quantiles = np.quantile(stacked.values, [low, high], axis=0)
        width = xr.DataArray(
            quantiles[1] - quantiles[0],
            dims=extra,
            coords={d: variable[d] for d in extra if d in variable.coords},
        )
        for label, w in zip(_element_labels(width, str(name)), np.ravel(width.values), strict=True):
            rows.append({"parameter": label, "width_private": float(w)})
    table = pd.DataFrame(rows, columns=["parameter", "width_private"])
    if plan is not None and len(plan):
        nearest = plan["epsilon"].iloc[np.argmin(np.abs(np.log(plan["epsilon"] / epsilon)))]
        planned = plan[plan["epsilon"] == nearest].set_index("parameter")
        table["width_private_expected"] = table["parameter"].map(planned["width_private"])
        table["width_nonprivate_expected"] = table["parameter"].map(planned["width_nonprivate"])
        table.attrs["plan_epsilon"] = float(nearest)
    return table


def _limits(ledger: PrivacyLedger) -> pd.DataFrame | None:
    if ledger.delta > 0 or not len(ledger):
        return None
    prior = np.asarray(PRIOR_PROBABILITIES)
    lower, upper = posterior_bounds(prior, ledger.epsilon, 1.0, sharp=True)
    return pd.DataFrame({"prior": prior, "lower": np.asarray(lower), "upper": np.asarray(upper)})


def _html_table(table: pd.DataFrame) -> str:
    shown = table.drop(columns=[c for c in ("values", "labels") if c in table.columns])
    return shown.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}", na_rep="")
