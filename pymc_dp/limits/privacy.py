"""The ε that the bounds use, read from a number, a ledger or a trace, and its metric.

Every bound of Bailie & Gong holds for a mechanism that is *pure* ε-DP, i.e. ε-Lipschitz in
the multiplicative distance (§2, Def. 2.1; §3, Thm 3.5). (ε, δ)-DP with δ > 0, zCDP, Rényi DP
and Gaussian DP give none of them (Remarks 3.8 and 6.6), so a ledger with δ > 0 is refused.
The ε of a ledger is its total by basic composition (:attr:`pymc_dp.PrivacyLedger.epsilon`,
sequential, parallel within declared partitions): at δ = 0 that is the tightest valid total
(:meth:`pymc_dp.PrivacyLedger.epsilon_at` at 0 is basic composition).
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Literal

import xarray as xr

from pymc_dp.ledger import PrivacyLedger
from pymc_dp.limits._common import check_epsilon_value

__all__ = [
    "METRICS",
    "Metric",
    "UnverifiedEpsilonWarning",
    "neighbouring_metric",
    "pure_epsilon",
]

Metric = Literal["hamming", "symmetric-difference"]
METRICS: dict[str, str] = {
    "hamming": "hamming",
    "symmetric-difference": "symmetric-difference",
    "replace-one": "hamming",
    "add-remove-one": "symmetric-difference",
}
"""Dataset metrics d and the ledger's neighbouring relations they correspond to
(Bailie & Gong, §3, Assumption 3.3: replace-one neighbours are Hamming distance 1, bounded
DP; add/remove-one neighbours are symmetric-difference distance 1, unbounded DP)."""


class UnverifiedEpsilonWarning(UserWarning):
    """The ledger's ε holds only under an assumption nobody has verified, so the bounds
    computed from it do too (:attr:`pymc_dp.PrivacyLedger.guaranteed` is False)."""


EpsilonSource = float | PrivacyLedger | xr.DataTree


def _ledger_of(source: PrivacyLedger | xr.DataTree) -> PrivacyLedger:
    if isinstance(source, PrivacyLedger):
        return source
    try:
        return PrivacyLedger.from_datatree(source)
    except KeyError:
        raise ValueError(
            "this DataTree carries no privacy ledger (no group 'privacy_ledger' and no root "
            "attribute 'pymc_dp_ledger'): pass the trace returned by pymc_dp.sample, its "
            "ledger, or epsilon as a number"
        ) from None


def pure_epsilon(source: EpsilonSource) -> float:
    """The pure ε-DP privacy loss that Bailie & Gong's bounds use.

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §2 Def. 2.1 and §3 Thm 3.5: the bounds hold for a mechanism whose output laws
    satisfy d_MULT(P_x, P_x') <= ε·d(x, x'); Remarks 3.8 and 6.6: no bound of this kind
    follows from (ε, δ)-DP with δ > 0, zCDP, Rényi DP or Gaussian DP.

    Parameters
    ----------
    source : float, PrivacyLedger or xarray.DataTree
        ε itself (finite, >= 0); or a ledger (a :class:`pymc_dp.PrivacySession` too); or a
        trace returned by :func:`pymc_dp.sample` (its ledger is read with
        :meth:`pymc_dp.PrivacyLedger.from_datatree`).

    Returns
    -------
    float
        ε in nats, >= 0: the number, or the ledger's total by basic composition (0 for a
        ledger with no events: nothing was released).

    Raises
    ------
    ValueError
        If the ledger's total δ is > 0 (the message gives the total δ and the mechanisms
        with δ > 0, never a data value); if a DataTree carries no ledger; if a number is
        negative, infinite or NaN.

    Warns
    -----
    UnverifiedEpsilonWarning
        If the ledger's ε holds only under an unverified assumption
        (``PrivacyLedger.guaranteed`` is False): the bounds then hold only under it too.

    Notes
    -----
    A trace charged to a :class:`pymc_dp.PrivacySession` records this run's events; someone
    who sees every release of the dataset learns up to the session's total ε
    (``ledger.session.epsilon``), which is the ε to pass for that question.
    """
    if isinstance(source, PrivacyLedger | xr.DataTree):
        ledger = _ledger_of(source)
        if ledger.delta > 0:
            mechanisms = Counter(e.mechanism for e in ledger.events if e.delta > 0)
            listed = ", ".join(f"{name} ×{count}" for name, count in sorted(mechanisms.items()))
            raise ValueError(
                f"the inferential limits need pure epsilon-DP (delta = 0), but this ledger's "
                f"total delta is {ledger.delta:g}: {sum(mechanisms.values())} of "
                f"{len(ledger)} events have delta > 0 ({listed}). (epsilon, delta)-DP, zCDP, "
                "Renyi and Gaussian DP give no such bounds (Bailie & Gong, Remarks 3.8 and "
                "6.6); use the pure-DP releases only (e.g. noise='laplace'). No bound was "
                "computed."
            )
        if not ledger.guaranteed:
            warnings.warn(
                "the ledger's epsilon holds only under an unverified assumption (see its "
                "events' unverified_assumption); bounds computed from it hold only under that "
                "assumption too",
                UnverifiedEpsilonWarning,
                stacklevel=2,
            )
        return float(ledger.epsilon)
    return check_epsilon_value(source)


def neighbouring_metric(source: str | PrivacyLedger | xr.DataTree) -> Metric:
    """The dataset metric d under which a ledger's ε holds (the metric Δ must be measured in).

    Bailie & Gong (2023/2024), General Inferential Limits Under Differential and Pufferfish
    Privacy, §2 (metrics (A) Hamming, bounded DP, and (B) symmetric difference, unbounded
    DP) and §3 Assumption 3.3 (d is a shortest-path metric with unit edges, so ε-DP for
    neighbours is ε·d-Lipschitz for every pair: group privacy).

    Parameters
    ----------
    source : str, PrivacyLedger or xarray.DataTree
        A metric name (``"hamming"``, ``"symmetric-difference"``), a neighbouring relation
        (``"replace-one"``, ``"add-remove-one"``), or a ledger / trace whose events all
        declare the same relation.

    Returns
    -------
    {"hamming", "symmetric-difference"}
        The metric.

    Raises
    ------
    ValueError
        If the name is unknown, the ledger has no events, or its events mix relations (Δ is
        then not one number of records: convert each event yourself and pass ε and Δ).
    """
    if isinstance(source, str):
        try:
            return METRICS[source]  # type: ignore[return-value]
        except KeyError:
            raise ValueError(f"metric must be one of {sorted(METRICS)}, got {source!r}") from None
    ledger = _ledger_of(source)
    relations = sorted({e.neighbouring for e in ledger.events})
    if not relations:
        raise ValueError("the ledger has no events, so it declares no neighbouring relation")
    if len(relations) > 1:
        raise ValueError(
            f"the ledger's events mix neighbouring relations {relations}: its epsilon is not "
            "a Lipschitz constant in one dataset metric; give epsilon and distance for one "
            "metric yourself (an add/remove-one epsilon-DP release is 2*epsilon-DP under "
            "replace-one)"
        )
    return METRICS[relations[0]]  # type: ignore[return-value]
