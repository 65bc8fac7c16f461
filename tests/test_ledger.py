"""PrivacyLedger: composition, budget enforcement, serialisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_dp import BudgetExceededError, PrivacyEvent, PrivacyLedger
from pymc_dp.ledger import split_epsilon


def event(epsilon=0.5, delta=0.0, **fields):
    base = {
        "mechanism": "laplace",
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": 2.0,
        "neighbouring": "replace-one",
        "variables": ("y", "p"),
        "noise_backend": "numpy",
    }
    return PrivacyEvent(**{**base, **fields})


@given(st.lists(st.floats(1e-3, 10.0), min_size=1, max_size=20))
def test_sequential_composition_adds_epsilons(epsilons):
    ledger = PrivacyLedger(events=[event(e) for e in epsilons])
    assert ledger.epsilon == pytest.approx(math.fsum(epsilons))
    assert PrivacyLedger.from_json(ledger.to_json()).events == ledger.events


def test_budget_is_enforced_and_nothing_is_recorded_on_refusal():
    ledger = PrivacyLedger(budget=(1.0, 1e-6))
    ledger.charge(event(0.6))
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        ledger.charge(event(0.5))
    with pytest.raises(
        BudgetExceededError, match=r"delta=1e-05\), over the budget \(epsilon=1, delta=1e-06\)"
    ):
        ledger.charge(event(0.1, delta=1e-5))  # within ε, over δ
    ledger.charge(event(0.4, delta=1e-6))  # exactly at the budget is allowed
    assert len(ledger) == 2 and ledger.remaining() == pytest.approx((0.0, 0.0))


def test_events_are_frozen_and_validated():
    e = event()
    with pytest.raises(AttributeError, match="cannot assign to field 'epsilon'"):
        e.epsilon = 2.0  # type: ignore[misc]
    for bad, match in (
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ({"epsilon": math.inf}, "epsilon must be a finite number > 0"),
        ({"delta": 1.0}, "delta must satisfy 0 <= delta < 1"),
        ({"sensitivity": 0.0}, "sensitivity must be finite and > 0"),
        ({"neighbouring": "swap"}, "neighbouring must be one of .*, got 'swap'"),
    ):
        with pytest.raises(ValueError, match=match):
            event(**bad)


def test_dataset_has_one_row_per_event_and_round_trips():
    ledger = PrivacyLedger(budget=3.0, events=[event(1.0), event(0.5, variables=("z", "q"))])
    ds = ledger.to_dataset()
    assert ds.sizes["event"] == 2
    assert ds["variables"].values.tolist() == ["y,p", "z,q"]
    assert ds.attrs["total_epsilon"] == 1.5 and ds.attrs["budget_epsilon"] == 3.0
    assert PrivacyLedger.from_dataset(ds).events == ledger.events
    assert PrivacyLedger().to_dataset().sizes["event"] == 0


def test_split_epsilon():
    assert split_epsilon(1.0, ["a", "b"]) == {"a": 0.5, "b": 0.5}
    assert split_epsilon({"a": 0.2, "b": 0.3}, ["a", "b"]) == {"a": 0.2, "b": 0.3}
    with pytest.raises(ValueError, match="missing"):
        split_epsilon({"a": 0.2}, ["a", "b"])
    with pytest.raises(ValueError, match=r"epsilon\['a'\] must be a finite number > 0"):
        split_epsilon({"a": -1.0}, ["a"])


def _event(epsilon, delta=0.0, partition=""):
    return PrivacyEvent(
        mechanism="laplace",
        epsilon=epsilon,
        delta=delta,
        sensitivity=1.0,
        neighbouring="add-remove-one",
        variables=("x",),
        noise_backend="numpy",
        partition=partition,
    )


def test_parallel_composition_within_a_partition_and_sequential_across():
    ledger = PrivacyLedger(
        events=[
            _event(1.0, partition="region"),
            _event(0.5, 1e-6, partition="region"),
            _event(0.7, partition="week"),
            _event(0.2),
        ]
    )
    assert ledger.epsilon == pytest.approx(1.0 + 0.7 + 0.2)  # max per partition, then sum
    assert ledger.delta == pytest.approx(1e-6)
    budgeted = PrivacyLedger(budget=1.0, events=[_event(0.8, partition="region")])
    budgeted.charge(_event(0.9, partition="region"))  # disjoint records: total is 0.9
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.1, delta=0\)"):
        budgeted.charge(_event(0.2))  # sequential to the partition: 0.9 + 0.2
    restored = PrivacyLedger.from_json(budgeted.to_json())
    assert restored.epsilon == pytest.approx(0.9) and restored.events[0].partition == "region"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.01, 5.0), st.sampled_from(["", "a", "b"])), min_size=1, max_size=12
    )
)
def test_parallel_totals_never_exceed_sequential_ones(costs):
    ledger = PrivacyLedger(events=[_event(e, partition=p) for e, p in costs])
    assert ledger.epsilon <= sum(e for e, _ in costs) + 1e-9
    assert ledger.epsilon >= max(e for e, _ in costs) - 1e-9


def test_gaussian_event_carries_rho_and_old_json_still_reads():
    from pymc_dp.mechanisms.gaussian import gaussian_calibration

    calibration = gaussian_calibration(math.sqrt(2), 1.0, 1e-6)
    event = PrivacyEvent(
        mechanism="gaussian",
        epsilon=1.0,
        delta=1e-6,
        sensitivity=math.sqrt(2),
        neighbouring="replace-one",
        variables=("y",),
        noise_backend="opendp",
        noise_scale=calibration.scale,
        rho=calibration.rho,
    )
    ledger = PrivacyLedger(events=[event])
    again = PrivacyLedger.from_json(ledger.to_json())
    assert again.events == (event,)
    assert again.events[0].rho == calibration.rho
    assert float(ledger.to_dataset()["rho"][0]) == calibration.rho
    # an event without ρ serialises as before the field existed, and reads back with None
    laplace = PrivacyEvent("laplace", 1.0, 0.0, 1.0, "replace-one", ("y",), "opendp", 1.0)
    assert "rho" not in laplace.to_dict()
    assert PrivacyEvent.from_dict(laplace.to_dict()).rho is None
    assert np.isnan(PrivacyLedger(events=[laplace]).to_dataset()["rho"][0])
    with pytest.raises(ValueError, match="rho must be a finite number > 0"):
        PrivacyEvent("gaussian", 1.0, 1e-6, 1.0, "replace-one", ("y",), "opendp", 4.5, rho=-1.0)


def test_dataframe_has_one_row_per_event_and_the_totals():
    ledger = PrivacyLedger(budget=(2.0, 1e-6))
    ledger.charge(event(0.5, variables=("y", "g"), statistic="counts of y by g", noise_scale=4.0))
    ledger.charge(
        event(0.25, mechanism="ops", noise_scale=None, temperature=3.0, statistic="one draw")
    )
    table = ledger.to_dataframe()
    assert list(table.columns) == [
        "mechanism",
        "variables",
        "statistic",
        "epsilon",
        "delta",
        "sensitivity",
        "noise_scale",
        "temperature",
        "neighbouring",
        "partition",
    ]
    assert table.index.name == "event" and len(table) == 2
    assert table.loc[0, "variables"] == "y, g" and table.loc[1, "temperature"] == 3.0
    assert math.isnan(table.loc[1, "noise_scale"]) and math.isnan(table.loc[0, "temperature"])
    assert table["epsilon"].sum() == table.attrs["epsilon"] == ledger.epsilon == 0.75
    assert table.attrs["budget"] == (2.0, 1e-6) and table.attrs["guaranteed"]
    assert table.attrs["tight_delta"] == 1e-6
    assert table.attrs["tight_epsilon"] == ledger.epsilon_at(1e-6).epsilon
    noise_only = PrivacyLedger(events=[event(0.5)]).to_dataframe()
    assert "temperature" not in noise_only.columns  # no event fills it
    chosen = ledger.to_dataframe(["epsilon", "mechanism"])
    assert list(chosen.columns) == ["epsilon", "mechanism"]
    with pytest.raises(ValueError, match=r"not fields of PrivacyEvent: \['eps'\]"):
        ledger.to_dataframe(["eps"])
    empty = PrivacyLedger().to_dataframe()
    assert len(empty) == 0 and empty.attrs["epsilon"] == 0


def test_html_view_shows_totals_budget_and_escaped_events():
    ledger = PrivacyLedger(budget=1.0)
    ledger.charge(event(0.25, statistic="<script>alert(1)</script>"))
    html = ledger._repr_html_()
    assert "&epsilon; = 0.25" in html and "remaining (0.75, 0)" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "NOT A GUARANTEE" not in html
    ledger.charge(event(0.25, unverified_assumption="every step rejects with p <= delta/n"))
    assert "NOT A GUARANTEE" in ledger._repr_html_()
