"""Tests for the bundled Minneapolis stops dataset."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest

from pymc_dp.datasets import MPLS_STOPS_CATEGORIES, load_mpls_stops
from pymc_dp.datasets.mpls_stops import _read_stops_csv

CATEGORICAL = [
    "problem",
    "MDC",
    "citationIssued",
    "personSearch",
    "vehicleSearch",
    "preRace",
    "race",
    "gender",
    "policePrecinct",
    "neighborhood",
]
SHA256 = "1a9143164da4d65e10f67a68cdd06b1f2bd559e3e98c66da23e5bea71cf7563e"


@pytest.fixture(scope="module")
def stops() -> pd.DataFrame:
    return load_mpls_stops()


@pytest.fixture(scope="module")
def raw_csv() -> pd.DataFrame:
    resource = resources.files("pymc_dp.datasets").joinpath("mpls_stops.csv.gz")
    with resources.as_file(resource) as path:
        return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_bundled_file_checksum_matches_provenance() -> None:
    data = resources.files("pymc_dp.datasets").joinpath("mpls_stops.csv.gz").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHA256
    doc = resources.files("pymc_dp.datasets").joinpath("MPLS_STOPS.md").read_text("utf-8")
    assert SHA256 in doc


def test_row_count_and_columns(stops: pd.DataFrame) -> None:
    assert len(stops) == 51_920
    assert list(stops.columns) == [
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
    ]
    assert stops["idNum"].is_unique


def test_dtypes(stops: pd.DataFrame) -> None:
    assert isinstance(stops["idNum"].dtype, pd.StringDtype)
    assert isinstance(stops["date"].dtype, pd.DatetimeTZDtype)
    assert str(stops["date"].dt.tz) == "UTC"
    assert stops["lat"].dtype == "float64"
    assert stops["long"].dtype == "float64"
    for col in CATEGORICAL:
        assert stops[col].dtype == pd.CategoricalDtype(MPLS_STOPS_CATEGORIES[col]), col


def test_categories_equal_declared_domain(stops: pd.DataFrame) -> None:
    assert set(MPLS_STOPS_CATEGORIES) == set(CATEGORICAL)
    for col in CATEGORICAL:
        assert tuple(stops[col].cat.categories) == MPLS_STOPS_CATEGORIES[col], col
    assert len(MPLS_STOPS_CATEGORIES["neighborhood"]) == 87
    assert list(MPLS_STOPS_CATEGORIES["neighborhood"]) == sorted(
        MPLS_STOPS_CATEGORIES["neighborhood"]
    )
    assert MPLS_STOPS_CATEGORIES["policePrecinct"] == ("1", "2", "3", "4", "5")
    for col in ("citationIssued", "personSearch", "vehicleSearch", "preRace", "race", "gender"):
        assert MPLS_STOPS_CATEGORIES[col][-1] == "Missing", col
    for col in ("problem", "MDC", "policePrecinct", "neighborhood"):
        assert "Missing" not in MPLS_STOPS_CATEGORIES[col], col


def test_no_nan_anywhere(stops: pd.DataFrame) -> None:
    assert not stops.isna().any().any()


def test_date_range_local_time(stops: pd.DataFrame) -> None:
    local = stops["date"].dt.tz_convert("America/Chicago")
    assert local.min() == pd.Timestamp("2017-01-01 00:00:42", tz="America/Chicago")
    assert local.max() == pd.Timestamp("2017-12-31 23:52:35", tz="America/Chicago")
    assert (local.dt.year == 2017).all()


@pytest.mark.parametrize(
    ("col", "expected"),
    [
        ("problem", {"traffic": 26_098, "suspicious": 25_822}),
        ("MDC", {"MDC": 43_699, "other": 8_221}),
        ("personSearch", {"YES": 5_237, "NO": 38_462, "Missing": 8_221}),
        ("vehicleSearch", {"YES": 3_120, "NO": 40_579, "Missing": 8_221}),
        ("citationIssued", {"YES": 3_211, "NO": 15_899, "Missing": 32_810}),
        ("gender", {"Male": 27_131, "Female": 10_015, "Unknown": 6_492, "Missing": 8_282}),
        ("policePrecinct", {"1": 7_552, "2": 9_478, "3": 9_792, "4": 12_273, "5": 12_825}),
    ],
)
def test_marginal_counts(stops: pd.DataFrame, col: str, expected: dict[str, int]) -> None:
    counts = stops[col].value_counts().to_dict()
    assert {k: v for k, v in counts.items() if v} == expected


def test_race_counts(stops: pd.DataFrame) -> None:
    race = stops["race"].value_counts()
    assert race["Black"] == 15_220
    assert race["White"] == 11_703
    assert race["Missing"] == 8_221
    assert stops["preRace"].value_counts()["Unknown"] == 28_337


def test_missing_matches_raw_empty_cells(stops: pd.DataFrame, raw_csv: pd.DataFrame) -> None:
    for col in CATEGORICAL:
        raw_missing = raw_csv[col] == ""
        assert ((stops[col] == "Missing") == raw_missing).all(), col


def _write_copy(raw: pd.DataFrame, path: Path) -> Path:
    raw.to_csv(path, index=False, lineterminator="\n")
    return path


@pytest.mark.integration
def test_unmodified_copy_round_trips(raw_csv: pd.DataFrame, tmp_path: Path) -> None:
    path = _write_copy(raw_csv, tmp_path / "stops.csv")
    pd.testing.assert_frame_equal(_read_stops_csv(path), load_mpls_stops())


def test_unknown_category_raises(raw_csv: pd.DataFrame, tmp_path: Path) -> None:
    bad = raw_csv.copy()
    bad.loc[10, "race"] = "Martian"
    path = _write_copy(bad, tmp_path / "bad.csv")
    with pytest.raises(ValueError, match=r"'race' has 1 distinct value\(s\) outside") as caught:
        _read_stops_csv(path)
    assert "Martian" not in str(caught.value)  # a count, never a record's value


def test_missing_in_non_missing_column_raises(raw_csv: pd.DataFrame, tmp_path: Path) -> None:
    bad = raw_csv.copy()
    bad.loc[3, "neighborhood"] = ""
    path = _write_copy(bad, tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="'neighborhood'"):
        _read_stops_csv(path)


def test_wrong_row_count_raises(raw_csv: pd.DataFrame, tmp_path: Path) -> None:
    path = _write_copy(raw_csv.iloc[:-1], tmp_path / "short.csv")
    with pytest.raises(ValueError, match="51920 rows"):
        _read_stops_csv(path)
