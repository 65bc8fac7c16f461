"""The main job: private rates from the Minneapolis police stops of 2017.

Privacy unit: one stop record of the bundled data (51,920 stops; neighbouring datasets replace
one record, n public). Two releases, by sequential composition:

1. ``person_search``: the race × {searched, not searched} table of the stops whose person-search
   outcome was recorded (one joint contingency table: L1 sensitivity 2 under replace-one, so ε₁
   is paid once for all groups). Model: ``person_search_rate[race] ~ Beta(1, 1)``, outcomes
   Bernoulli (Foulds et al. 2016, §3.2). A replaced record can enter or leave this subset; the
   table still changes by at most 2 in L1, so the guarantee holds for the full data.
2. ``stop_reason``: the counts of the stop reasons (``problem``) over all stops; two categories
   and n public, so only one count is released (L1 sensitivity 1). Model:
   ``stop_reason_probability ~ Dirichlet(1, 1)``, reasons Categorical.

Groups and categories are the declared schema (:data:`MPLS_STOPS_CATEGORIES`), not read off
the data, so the release reveals nothing through its shape.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm

from pymc_dp.datasets import MPLS_STOPS_CATEGORIES
from pymc_dp.distributions import TruncatedBeta, TruncatedDirichlet
from pymc_dp.hmm.cells import CellCounts, cell_counts_from_frame

__all__ = [
    "HMM_FEATURES",
    "HMM_FEATURE_LABELS",
    "RATE",
    "REASON",
    "stops_cells",
    "stops_model",
    "stops_planning_model",
    "stops_weeks",
]

RATE = "person_search_rate"
REASON = "stop_reason_probability"


def stops_model(stops: pd.DataFrame, truncation: float | None = None) -> pm.Model:
    """PyMC model of person-search rates by perceived race and of stop reasons.

    Parameters
    ----------
    stops : DataFrame
        Output of :func:`pymc_dp.datasets.load_mpls_stops` (or a subset with the same
        categorical dtypes).
    truncation : float, optional
        a0: truncate both priors to probabilities >= a0 (``TruncatedBeta`` on [a0, 1 − a0],
        ``TruncatedDirichlet``), as the posterior-sampling mechanisms need (Foulds et al.
        2016, eq. 15). None (default): the untruncated priors of the Laplace path.

    Returns
    -------
    pm.Model
        Free variables ``person_search_rate`` (dims ``race``) and
        ``stop_reason_probability`` (dims ``reason``); observed ``person_search`` and
        ``stop_reason``.
    """
    races = list(MPLS_STOPS_CATEGORIES["race"])
    reasons = list(MPLS_STOPS_CATEGORIES["problem"])
    recorded = stops[stops["personSearch"] != "Missing"]
    race_index = pd.Categorical(recorded["race"], categories=races).codes.astype(np.int64)
    searched = (recorded["personSearch"] == "YES").to_numpy(np.int64)
    reason_index = pd.Categorical(stops["problem"], categories=reasons).codes.astype(np.int64)
    with pm.Model(coords={"race": races, "reason": reasons}) as model:
        if truncation is None:
            rate = pm.Beta(RATE, alpha=1.0, beta=1.0, dims="race")
            reason = pm.Dirichlet(REASON, a=np.ones(len(reasons)), dims="reason")
        else:
            rate = TruncatedBeta(RATE, 1.0, 1.0, truncation, dims="race")
            reason = TruncatedDirichlet(REASON, np.ones(len(reasons)), truncation, dims="reason")
        pm.Bernoulli("person_search", p=rate[race_index], observed=searched)
        pm.Categorical("stop_reason", p=reason, observed=reason_index)
    return model


PLANNING_LABELS = "race_label"
"""Name of the ``pm.Data`` holding the race labels in :func:`stops_planning_model`."""


def stops_planning_model(n_stops: int) -> tuple[pm.Model, dict[str, np.ndarray]]:
    """The structure of :func:`stops_model` for :func:`pymc_dp.plan`, from public numbers only.

    Every one of the ``n_stops`` stops (public under replace-one) is taken to have a recorded
    person-search outcome, and the races to be equally frequent: the true number recorded
    and the group sizes are private, so a plan cannot use them. The race labels are a
    ``pm.Data`` (:data:`PLANNING_LABELS`), private as in the real run; the second item is
    their public stand-in for ``pymc_dp.plan(data=...)``. Observed values are zeros: a plan
    replaces them with simulated records.
    """
    races = list(MPLS_STOPS_CATEGORIES["race"])
    reasons = list(MPLS_STOPS_CATEGORIES["problem"])
    labels = np.arange(int(n_stops), dtype=np.int64) % len(races)
    with pm.Model(coords={"race": races, "reason": reasons}) as model:
        race_index = pm.Data(PLANNING_LABELS, labels)
        rate = pm.Beta(RATE, alpha=1.0, beta=1.0, dims="race")
        reason = pm.Dirichlet(REASON, a=np.ones(len(reasons)), dims="reason")
        pm.Bernoulli("person_search", p=rate[race_index], observed=np.zeros(n_stops, np.int64))
        pm.Categorical("stop_reason", p=reason, observed=np.zeros(n_stops, np.int64))
    return model, {PLANNING_LABELS: labels}


# --- region × week cells for the naive-Bayes HMM (Foulds et al. 2016, §5) ------------------

HMM_FEATURES: tuple[str, ...] = (
    "problem",
    "citationIssued",
    "personSearch",
    "vehicleSearch",
    "race",
    "gender",
)
"""Record features of the stops HMM; a missing value is the declared category "Missing"."""
HMM_FEATURE_LABELS: dict[str, str] = {
    "problem": "stop reason (problem)",
    "citationIssued": "citation issued",
    "personSearch": "person searched",
    "vehicleSearch": "vehicle searched",
    "race": "perceived race",
    "gender": "gender",
}
"""Readable names of the HMM features, for figures."""
REGION_COLUMNS = {"precinct": "policePrecinct", "neighborhood": "neighborhood"}
LOCAL_TIME_ZONE = "America/Chicago"


def stops_weeks() -> tuple[str, ...]:
    """The public time grid: every ISO week that contains a day of 2017 (local time).

    1 January 2017 was a Sunday, so the grid runs from ``2016-W52`` to ``2017-W52`` (53 weeks).
    """
    days = pd.date_range("2017-01-01", "2017-12-31", freq="D")
    iso = days.isocalendar()
    return tuple(dict.fromkeys(f"{y}-W{w:02d}" for y, w in zip(iso.year, iso.week, strict=True)))


def _week_labels(dates: pd.Series) -> pd.Series:
    local = dates.dt.tz_convert(LOCAL_TIME_ZONE)
    iso = local.dt.isocalendar()
    return iso.year.astype(str) + "-W" + iso.week.astype(int).map("{:02d}".format)


def stops_cells(stops: pd.DataFrame, regions: str = "precinct") -> CellCounts:
    """Count the stops into region × ISO-week cells of the six HMM features.

    Parameters
    ----------
    stops : DataFrame
        Output of :func:`pymc_dp.datasets.load_mpls_stops`.
    regions : {"precinct", "neighborhood"}
        5 police precincts or 87 neighbourhoods (the declared lists of
        :data:`MPLS_STOPS_CATEGORIES`).

    Returns
    -------
    CellCounts
        Shape (5 or 87, 53, 6, 9): every declared cell, empty ones included.

    Raises
    ------
    InvalidPrivateDataError
        If a stop falls outside the declared weeks, regions or categories.
    """
    if regions not in REGION_COLUMNS:
        raise ValueError(f"regions must be one of {sorted(REGION_COLUMNS)}, got {regions!r}")
    column = REGION_COLUMNS[regions]
    frame = stops.assign(week=_week_labels(stops["date"]))
    return cell_counts_from_frame(
        frame,
        region=column,
        time="week",
        features=HMM_FEATURES,
        regions=MPLS_STOPS_CATEGORIES[column],
        times=stops_weeks(),
        categories={f: MPLS_STOPS_CATEGORIES[f] for f in HMM_FEATURES},
    )
