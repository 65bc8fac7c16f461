"""Tests that kill the surviving mutants of ``pymc_dp.ledger`` (docs/mutation_testing.md).

Every expected value follows from the docstrings' stated contract: basic composition adds
epsilons and deltas (parallel within a partition), a budget is checked with a 1e-12 slack, the
tight total is :func:`pymc_dp.accounting.epsilon_at` (checked on its own in
``tests/test_accounting_mutants.py``) and is bounded above by the advanced composition theorem
(Dwork, Rothblum & Vadhan 2010) computed here. Never a copy of an output of the ledger.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr

from pymc_dp import BudgetExceededError, PrivacyEvent, PrivacyLedger
from pymc_dp.accounting import DEFAULT_DELTA
from pymc_dp.accounting import epsilon_at as accounting_epsilon_at
from pymc_dp.ledger import (
    LEDGER_ATTR,
    LEDGER_GROUP,
    SessionSpend,
    compose,
    split_epsilon,
    validate_delta,
    validate_epsilon,
    validate_neighbouring,
)

TIME = "2024-01-01T00:00:00+00:00"


def laplace(epsilon=0.5, delta=0.0, **fields):
    """A Laplace event of scale Δ/ε (Δ = 1), fields overridable."""
    base = {
        "mechanism": "laplace",
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": 1.0,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "noise_backend": "numpy",
        "noise_scale": 1.0 / epsilon,
        "time": TIME,
    }
    return PrivacyEvent(**{**base, **fields})


def advanced_bound(epsilon, k, delta):
    """Dwork, Rothblum & Vadhan (2010), Thm III.3: k ε-DP releases are (ε', δ)-DP with
    ε' = √(2k log(1/δ)) ε + k ε (e^ε − 1)."""
    return math.sqrt(2 * k * math.log(1 / delta)) * epsilon + k * epsilon * math.expm1(epsilon)


SPEND = SessionSpend("/tmp/s.ledger", "patients", 1.25, 1e-7, 3, "ab" * 32)


# --- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, -math.inf, math.nan])
def test_validate_epsilon_refuses_non_positive_and_non_finite_naming_the_argument(bad):
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number > 0, got "):
        validate_epsilon(bad)
    with pytest.raises(ValueError, match=r"^eps_x must be a finite number > 0, got "):
        validate_epsilon(bad, "eps_x")


def test_validate_epsilon_accepts_any_positive_finite_value_as_a_float():
    assert validate_epsilon(5e-324) == 5e-324
    value = validate_epsilon(3)
    assert value == 3.0 and type(value) is float


def test_split_epsilon_checks_each_value_of_a_dict_under_its_name():
    assert split_epsilon({"b": 0.3, "a": 0.2}, ["a", "b"]) == {"a": 0.2, "b": 0.3}
    with pytest.raises(ValueError, match=r"^epsilon\['b'\] must be a finite number > 0, got 0$"):
        split_epsilon({"a": 0.2, "b": 0}, ["a", "b"])


def test_split_epsilon_divides_a_total_equally():
    assert split_epsilon(3.0, ["a", "b", "c"]) == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert split_epsilon(2.0, iter(["a"])) == {"a": 2.0}


def test_split_epsilon_names_the_missing_and_the_unknown_releases():
    with pytest.raises(
        ValueError,
        match=(
            r"^epsilon dict must name exactly the private releases \['a', 'b'\]; "
            r"missing \['b'\], unknown \['c'\]$"
        ),
    ):
        split_epsilon({"a": 0.1, "c": 0.2}, ["a", "b"])
    with pytest.raises(ValueError, match=r"missing \[\], unknown \['c'\]$"):
        split_epsilon({"a": 0.1, "c": 0.2}, ["a"])
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number > 0"):
        split_epsilon(0.0, ["a"])


def test_validate_delta_interval_and_message():
    assert validate_delta(0) == 0.0 and type(validate_delta(0)) is float
    assert validate_delta(0.999) == 0.999
    assert validate_delta(1e-300, positive=True) == 1e-300
    for bad in (1.0, -1e-300, math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match=r"^delta must satisfy 0 <= delta < 1, got "):
            validate_delta(bad)
    for bad in (0.0, 1.0, -0.5, math.nan):
        with pytest.raises(ValueError, match=r"^d must satisfy 0 < d < 1 \(why\), got "):
            validate_delta(bad, "d", positive=True, reason=" (why)")


def test_validate_neighbouring_accepts_both_relations_and_names_them_on_refusal():
    assert validate_neighbouring("replace-one") == "replace-one"
    assert validate_neighbouring("add-remove-one") == "add-remove-one"
    with pytest.raises(
        ValueError,
        match=(
            r"^neighbouring must be one of \('replace-one', 'add-remove-one'\), got 'swap-one'$"
        ),
    ):
        validate_neighbouring("swap-one")


# --- events -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_an_event_refuses_a_bad_sensitivity_with_its_message(bad):
    with pytest.raises(ValueError, match=r"^sensitivity must be finite and > 0, got "):
        laplace(sensitivity=bad)


@pytest.mark.parametrize("bad", [0, -2, True, False, 1.5, "2", None])
def test_an_event_refuses_compositions_that_are_not_integers_at_least_1(bad):
    with pytest.raises(ValueError, match=r"^compositions must be an integer >= 1, got "):
        laplace(compositions=bad)


def test_an_event_stores_compositions_as_a_python_int_and_variables_as_a_tuple():
    event = laplace(compositions=np.int64(3), variables=["y", "x"])
    assert event.compositions == 3 and type(event.compositions) is int
    assert event.variables == ("y", "x")
    assert laplace(compositions=1).compositions == 1


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, True])
def test_an_event_refuses_a_bad_rho_with_its_message(bad):
    with pytest.raises(ValueError, match=r"^rho must be a finite number > 0 or None, got "):
        laplace(rho=bad)


def test_an_event_stores_rho_as_a_float():
    event = laplace(rho=2)
    assert event.rho == 2.0 and type(event.rho) is float
    assert laplace().rho is None


def test_event_dict_omits_compositions_1_and_rho_none_and_lists_the_variables():
    plain = laplace(variables=("y", "x")).to_dict()
    assert "compositions" not in plain and "rho" not in plain
    assert plain["variables"] == ["y", "x"]
    assert plain["epsilon"] == 0.5 and plain["time"] == TIME
    rich = laplace(compositions=4, rho=0.125).to_dict()
    assert rich["compositions"] == 4 and rich["rho"] == 0.125
    assert json.loads(json.dumps(rich)) == rich
    assert PrivacyEvent.from_dict(rich) == laplace(compositions=4, rho=0.125)
    assert PrivacyEvent.from_dict(plain) == laplace(variables=("y", "x"))


def test_session_spend_dict_has_every_field():
    assert SPEND.to_dict() == {
        "path": "/tmp/s.ledger",
        "dataset_id": "patients",
        "epsilon": 1.25,
        "delta": 1e-7,
        "n_events": 3,
        "head": "ab" * 32,
    }


# --- totals and budget ------------------------------------------------------------------------
def test_budget_forms_and_their_messages():
    assert PrivacyLedger(2).budget == (2.0, 0.0)
    assert PrivacyLedger((2, 1e-6)).budget == (2.0, 1e-6)
    assert PrivacyLedger([2, 1e-6]).budget == (2.0, 1e-6)
    assert PrivacyLedger().budget is None
    with pytest.raises(ValueError, match=r"^budget epsilon must be a finite number > 0"):
        PrivacyLedger((0.0, 1e-6))
    with pytest.raises(ValueError, match=r"^budget delta must satisfy 0 <= budget delta < 1"):
        PrivacyLedger((1.0, 1.0))


def test_events_given_to_the_constructor_are_charged_against_its_budget():
    with pytest.raises(BudgetExceededError):
        PrivacyLedger(budget=1.0, events=[laplace(0.6), laplace(0.6)])
    assert PrivacyLedger(budget=1.0, events=[laplace(0.6), laplace(0.4)]).epsilon == 1.0


def test_tight_budget_flag_is_a_bool():
    assert PrivacyLedger(tight_budget=1).tight_budget is True
    assert PrivacyLedger().tight_budget is False


def test_totals_guaranteed_and_reporting_delta():
    ledger = PrivacyLedger(
        events=[laplace(0.5, 1e-7, partition="p"), laplace(0.25, 3e-7, partition="p")]
    )
    assert ledger.epsilon == 0.5 and ledger.delta == 3e-7  # parallel: the largest of each
    assert ledger.guaranteed
    assert ledger.reporting_delta == DEFAULT_DELTA == 1e-6
    assert PrivacyLedger(budget=(1.0, 1e-9)).reporting_delta == 1e-9
    caveat = PrivacyLedger(events=[laplace(unverified_assumption="rejection bound")])
    assert not caveat.guaranteed


def test_remaining_without_budget_with_basic_and_with_tight_budget():
    assert PrivacyLedger().remaining() == (math.inf, 1.0)
    spent_delta = PrivacyLedger(budget=(1.0, 1e-6), events=[laplace(0.25, 4e-7)])
    assert spent_delta.remaining() == pytest.approx((0.75, 6e-7), rel=1e-12)
    events = [laplace(0.1) for _ in range(50)]
    basic = PrivacyLedger(budget=(10.0, 1e-6), events=events)
    assert basic.remaining() == pytest.approx((5.0, 1e-6), rel=1e-12)
    tight = PrivacyLedger(budget=(10.0, 1e-6), events=events, tight_budget=True)
    spent = accounting_epsilon_at(events, 1e-6).epsilon
    assert spent < advanced_bound(0.1, 50, 1e-6) < 5.0
    assert tight.remaining() == pytest.approx((10.0 - spent, 1e-6), rel=1e-12)
    # tight_budget at δ = 0 is basic: pure DP has no tighter total
    pure = PrivacyLedger(budget=10.0, events=events, tight_budget=True)
    assert pure.remaining() == pytest.approx((5.0, 0.0), abs=1e-12)


def test_check_adds_the_cost_in_its_partition():
    ledger = PrivacyLedger(budget=1.0, events=[laplace(0.8, partition="region")])
    ledger.check(0.9, partition="region")  # disjoint records: 0.9 in all
    ledger.check(0.2)  # 0.8 + 0.2 = 1.0: exactly the budget
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.7, delta=0\)"):
        ledger.check(0.9)
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=0\.8, delta=1e-09\)"):
        ledger.check(0.1, 1e-9, partition="region")
    assert len(ledger) == 1  # checks record nothing


def test_the_budget_slack_is_1e_12_relative_in_epsilon_and_absolute_in_delta():
    ledger = PrivacyLedger(budget=(1.0, 1e-6))
    ledger.check(1.0 + 0.5e-12, 1e-6 + 0.5e-12)
    with pytest.raises(BudgetExceededError):
        ledger.check(1.0 + 3e-12)
    with pytest.raises(BudgetExceededError):
        ledger.check(0.5, 1e-6 + 3e-12)
    big = PrivacyLedger(budget=1000.0)
    big.check(1000.0 * (1 + 0.5e-12))  # relative: 5e-10 above 1000 still fits
    with pytest.raises(BudgetExceededError):
        big.check(1000.0 * (1 + 3e-12))


def test_refusal_message_names_the_release_the_total_and_the_budget():
    ledger = PrivacyLedger(budget=(1.0, 1e-6), events=[laplace(0.75)])
    with pytest.raises(
        BudgetExceededError,
        match=(
            r"^release of \(epsilon=0\.5, delta=2e-07\) would bring the total to "
            r"\(epsilon=1\.25, delta=2e-07\), over the budget \(epsilon=1, delta=1e-06\); "
            r"nothing was released$"
        ),
    ):
        ledger.charge(laplace(0.5, 2e-7))
    assert len(ledger) == 1


def test_a_tight_budget_admits_releases_whose_sum_exceeds_it():
    budget = (7.0, 1e-6)
    # 100 releases at ε = 0.1: basic 10, advanced composition (an upper bound of the tight
    # figure) about 6.3 < 7
    assert advanced_bound(0.1, 100, 1e-6) < 7.0
    tight = PrivacyLedger(budget=budget, tight_budget=True)
    for _ in range(100):
        tight.charge(laplace(0.1))
    assert len(tight) == 100
    basic = PrivacyLedger(budget=budget)
    for _ in range(70):
        basic.charge(laplace(0.1))
    with pytest.raises(BudgetExceededError, match=r"over the budget \(epsilon=7, delta=1e-06\)"):
        basic.charge(laplace(0.1))
    # a bare cost is added by basic composition: 100 × 0.1 checked only by its sum
    with pytest.raises(BudgetExceededError, match="tightest valid epsilon"):
        PrivacyLedger(budget=budget, tight_budget=True).check_all([(0.1, 0.0)] * 100)


def test_a_tight_refusal_states_the_tight_total_and_its_method():
    ledger = PrivacyLedger(budget=(3.0, 1e-6), tight_budget=True)
    events = []
    with pytest.raises(BudgetExceededError) as refused:
        for _ in range(1000):
            event = laplace(0.1)
            ledger.charge(event)
            events.append(event)
    composition = accounting_epsilon_at([*events, laplace(0.1)], 1e-6)
    assert composition.epsilon > 3.0
    message = str(refused.value)
    assert (
        f" (tightest valid epsilon at delta=1e-06: {composition.epsilon:g}, by "
        f"{composition.method} composition), over the budget (epsilon=3, delta=1e-06)"
    ) in message
    assert len(ledger) == len(events) and accounting_epsilon_at(events, 1e-6).epsilon <= 3.0


def test_a_tight_budget_equal_to_the_tight_total_admits_the_last_release():
    events = [laplace(0.1) for _ in range(100)]
    tight = accounting_epsilon_at(events, 1e-6).epsilon
    assert tight < 10.0  # basic is 10: only the tight check admits the 100th release
    ledger = PrivacyLedger(budget=(tight, 1e-6), events=events, tight_budget=True)
    assert len(ledger) == 100


def test_a_tight_budget_at_delta_0_is_checked_by_basic_composition():
    ledger = PrivacyLedger(budget=5.0, tight_budget=True)
    for _ in range(50):
        ledger.charge(laplace(0.1))
    with pytest.raises(BudgetExceededError) as refused:
        ledger.charge(laplace(0.1))
    assert "tightest" not in str(refused.value)


def test_check_all_adds_epsilons_and_deltas():
    ledger = PrivacyLedger(budget=(1.0, 3e-7))
    ledger.check_all([(0.5, 1e-7), (0.5, 2e-7)])
    ledger.check_all([])
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=1\.1, delta=3e-07\)"):
        ledger.check_all([(0.5, 1e-7), (0.6, 2e-7)])
    with pytest.raises(BudgetExceededError, match=r"total to \(epsilon=0\.2, delta=4e-07\)"):
        ledger.check_all([(0.1, 2e-7), (0.1, 2e-7)])


def test_hold_yields_the_ledger_itself():
    ledger = PrivacyLedger()
    with ledger.hold() as held:
        assert held is ledger


def test_compose_is_sequential_and_parallel_within_partitions():
    assert compose([(0.5, 1e-7, ""), (0.25, 2e-7, "")]) == pytest.approx((0.75, 3e-7))
    assert compose([(0.5, 1e-7, "p"), (0.25, 2e-7, "p"), (0.125, 0.0, "q")]) == pytest.approx(
        (0.625, 2e-7)
    )


# --- serialisation ----------------------------------------------------------------------------
def _ledger(**kwargs):
    events = [laplace(0.5, 1e-7, compositions=2), laplace(0.25, rho=0.5, partition="p")]
    return PrivacyLedger(budget=(2.0, 1e-6), events=events, **kwargs)


def test_json_has_every_documented_field():
    ledger = _ledger()
    record = json.loads(ledger.to_json())
    assert record["schema_version"] == 1
    assert record["composition"] == "sequential; parallel within partitions"
    assert record["epsilon"] == 0.75 and record["delta"] == 1e-7
    assert record["budget"] == [2.0, 1e-6]
    assert record["events"] == [e.to_dict() for e in ledger.events]
    assert record["tight"] == accounting_epsilon_at(ledger.events, 1e-6).to_dict()
    assert "tight_budget" not in record and "session" not in record
    assert json.loads(PrivacyLedger().to_json())["budget"] is None
    assert json.loads(_ledger(tight_budget=True).to_json())["tight_budget"] is True


def test_json_round_trip_keeps_budget_tight_flag_and_session():
    ledger = _ledger(tight_budget=True)
    ledger.session = SPEND
    assert json.loads(ledger.to_json())["session"] == SPEND.to_dict()
    again = PrivacyLedger.from_json(ledger.to_json())
    assert type(again) is PrivacyLedger
    assert again.budget == (2.0, 1e-6) and again.tight_budget is True
    assert again.events == ledger.events and again.session == SPEND
    plain = PrivacyLedger.from_json(PrivacyLedger(events=[laplace()]).to_json())
    assert plain.budget is None and plain.tight_budget is False and plain.session is None


def test_dataset_columns_dtypes_and_attributes():
    ledger = _ledger()
    ledger.session = SPEND
    ds = ledger.to_dataset()
    assert ds["epsilon"].dtype == np.float64 and ds["epsilon"].values.tolist() == [0.5, 0.25]
    assert np.isnan(ds["temperature"].values).all()
    assert ds["rho"].values[1] == 0.5 and np.isnan(ds["rho"].values[0])
    assert ds["assumes_convergence"].dtype == bool
    assert ds["compositions"].dtype == np.int64 and ds["compositions"].values.tolist() == [2, 1]
    assert ds["partition"].values.tolist() == ["", "p"]
    assert ds["variables"].values.tolist() == ["y", "y"]
    assert ds["mechanism"].dtype.kind == "U"
    assert ds["event"].values.tolist() == [0, 1]
    assert set(ds.dims) == {"event"} and list(ds.coords) == ["event"]
    assert all(ds[name].dims == ("event",) for name in ds.data_vars)
    tight = accounting_epsilon_at(ledger.events, 1e-6)
    attrs = ds.attrs
    assert attrs["composition"] == "sequential; parallel within partitions"
    assert attrs["total_epsilon"] == 0.75 and attrs["total_delta"] == 1e-7
    assert attrs["tight_epsilon"] == tight.epsilon and attrs["tight_delta"] == 1e-6
    assert attrs["tight_method"] == tight.method
    assert attrs["budget_epsilon"] == 2.0 and attrs["budget_delta"] == 1e-6
    assert attrs["guaranteed"] == 1 and type(attrs["guaranteed"]) is int
    assert json.loads(attrs["ledger_json"]) == json.loads(ledger.to_json())
    assert attrs["session_path"] == SPEND.path
    assert attrs["session_dataset_id"] == SPEND.dataset_id
    assert attrs["session_epsilon"] == SPEND.epsilon
    assert attrs["session_delta"] == SPEND.delta
    assert attrs["session_events"] == SPEND.n_events
    assert attrs["session_head"] == SPEND.head


def test_dataset_columns_are_typed_whatever_the_python_types_of_the_fields():
    events = [laplace(1, sensitivity=2, noise_scale=2, variables=("y", "x"))]
    ds = PrivacyLedger(events=events).to_dataset()
    for column in ("epsilon", "delta", "sensitivity", "noise_scale", "temperature", "rho"):
        assert ds[column].dtype == np.float64, column
    assert ds["variables"].values.tolist() == ["y,x"]
    assert ds["epsilon"].values.tolist() == [1.0]


def test_dataset_of_a_ledger_without_budget_events_or_session():
    ds = PrivacyLedger().to_dataset()
    assert ds.sizes["event"] == 0
    assert np.isnan(ds.attrs["budget_epsilon"]) and np.isnan(ds.attrs["budget_delta"])
    assert "session_path" not in ds.attrs
    assert ds["mechanism"].dtype.kind == "U" and ds["epsilon"].dtype == np.float64
    assert ds["assumes_convergence"].dtype == bool and ds["compositions"].dtype == np.int64
    unguaranteed = PrivacyLedger(events=[laplace(unverified_assumption="x")]).to_dataset()
    assert unguaranteed.attrs["guaranteed"] == 0


def test_dataset_round_trip():
    ledger = _ledger(tight_budget=True)
    again = PrivacyLedger.from_dataset(ledger.to_dataset())
    assert again.events == ledger.events and again.tight_budget is True


def test_attach_stores_group_and_attribute_and_from_datatree_reads_either():
    ledger = _ledger()
    tree = ledger.attach(xr.DataTree())
    assert LEDGER_GROUP == "privacy_ledger" and LEDGER_ATTR == "pymc_dp_ledger"
    assert json.loads(tree.attrs["pymc_dp_ledger"]) == json.loads(ledger.to_json())
    assert tree["privacy_ledger"].to_dataset()["epsilon"].values.tolist() == [0.5, 0.25]
    assert PrivacyLedger.from_datatree(tree).events == ledger.events
    group_only = xr.DataTree()
    group_only["privacy_ledger"] = ledger.to_dataset()
    assert PrivacyLedger.from_datatree(group_only).events == ledger.events
    with pytest.raises(KeyError, match=r"^'this trace carries no privacy ledger'$"):
        PrivacyLedger.from_datatree(xr.DataTree())


def test_copy_is_independent_and_keeps_budget_flag_and_session():
    ledger = _ledger(tight_budget=True)
    ledger.session = SPEND
    copy = ledger.copy()
    assert type(copy) is PrivacyLedger
    assert copy.budget == ledger.budget and copy.events == ledger.events
    assert copy.tight_budget is True and copy.session is SPEND
    copy.charge(laplace(0.1))
    assert len(copy) == 3 and len(ledger) == 2


def test_repr_states_totals_budget_and_the_caveat():
    ledger = PrivacyLedger(budget=(2.0, 1e-6), events=[laplace(0.5, 1e-7)])
    assert repr(ledger) == (
        "PrivacyLedger(events=1, epsilon=0.5, delta=1e-07, budget=(2, 1e-06), "
        "composition=sequential; parallel within partitions)"
    )
    caveat = PrivacyLedger(events=[laplace(unverified_assumption="x")])
    assert repr(caveat) == (
        "PrivacyLedger(events=1, epsilon=0.5, delta=0, budget=none, "
        "composition=sequential; parallel within partitions, "
        "NOT A GUARANTEE (unverified assumption))"
    )
