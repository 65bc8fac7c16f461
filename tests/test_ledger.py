"""PrivacyLedger: composition, budget enforcement, serialisation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
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
    with pytest.raises(BudgetExceededError):
        ledger.charge(event(0.1, delta=1e-5))
    ledger.charge(event(0.4, delta=1e-6))  # exactly at the budget is allowed
    assert len(ledger) == 2 and ledger.remaining() == pytest.approx((0.0, 0.0))


def test_events_are_frozen_and_validated():
    e = event()
    with pytest.raises(AttributeError):
        e.epsilon = 2.0  # type: ignore[misc]
    for bad in (
        {"epsilon": 0.0},
        {"epsilon": math.inf},
        {"delta": 1.0},
        {"sensitivity": 0.0},
        {"neighbouring": "swap"},
    ):
        with pytest.raises(ValueError):
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
    with pytest.raises(ValueError):
        split_epsilon({"a": -1.0}, ["a"])
