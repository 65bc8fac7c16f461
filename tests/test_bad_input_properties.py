"""Property: arbitrary bad inputs to ``pymc_dp.sample`` raise a clear error and spend nothing.

For every generated bad input (a bad option value, an unknown keyword, a record outside the
domain) on the Laplace and the posterior-sampling routes, ``pymc_dp.sample`` must raise an
error whose message names the offending option or variable, and both the ``ledger=`` passed
in and a :class:`~pymc_dp.PrivacySession` file passed as ``session=`` must be untouched: no
event, no spend, not one byte more in the file.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import InvalidPrivateDataError, PrivacyLedger, PrivacySession
from pymc_dp.distributions import TruncatedBeta

GOOD = [1, 0, 1, 1, 0]
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _model(mechanism, data=GOOD):
    with pm.Model() as model:
        if mechanism == "laplace":
            rate = pm.Beta("rate", 1.0, 1.0)
        else:
            rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=np.asarray(data, dtype=float))
    return model


bad_epsilon = st.one_of(
    st.floats(max_value=0.0),
    st.sampled_from([math.nan, math.inf, -math.inf]),
).map(lambda e: ({"epsilon": e}, "epsilon"))
bad_delta = st.one_of(
    st.floats(max_value=-1e-12, allow_nan=False),
    st.floats(min_value=1.0),
    st.just(math.nan),
).map(lambda d: ({"epsilon": 1.0, "delta": d}, "delta"))
bad_keyword = st.from_regex(r"\A[a-z]{3,12}_zz\Z").map(
    lambda name: ({"epsilon": 1.0, name: 1}, name)
)
bad_choice = st.sampled_from(["noise_backend", "neighbouring", "mechanism"]).flatmap(
    lambda option: st.text("abcxyz-", min_size=1, max_size=8).map(
        lambda value: ({"epsilon": 1.0, option: value}, option)
    )
)
bad_count = st.sampled_from(["chains", "tune"]).flatmap(
    lambda option: st.integers(max_value=-1).map(
        lambda value: ({"epsilon": 1.0, option: value}, option)
    )
)
bad_options = st.one_of(bad_epsilon, bad_delta, bad_keyword, bad_choice, bad_count)
bad_record = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(min_value=2, max_value=10**6).map(float),
    st.integers(max_value=-1, min_value=-(10**6)).map(float),
)


@SETTINGS
@given(
    mechanism=st.sampled_from(["laplace", "ops", "gibbs-exponential"]),
    bad=bad_options,
)
def test_bad_options_raise_and_charge_nothing(tmp_path_factory, mechanism, bad):
    options, name = bad
    options = {"mechanism": mechanism, **options}
    ledger = PrivacyLedger(budget=(5.0, 1e-6))
    path = tmp_path_factory.mktemp("session") / "budget.jsonl"
    session = PrivacySession(path, "bad-input", budget=(5.0, 1e-6))
    size = path.stat().st_size if path.exists() else 0
    for target in ({"ledger": ledger}, {"session": session}):
        with pytest.raises((ValueError, TypeError), match=name):
            pymc_dp.sample(5, model=_model(mechanism), progressbar=False, **target, **options)
    assert ledger.events == () and len(session.events) == 0
    assert (path.stat().st_size if path.exists() else 0) == size


@SETTINGS
@given(
    mechanism=st.sampled_from(["laplace", "ops", "gibbs-exponential"]),
    record=bad_record,
    position=st.integers(0, len(GOOD) - 1),
)
def test_bad_records_raise_and_charge_nothing(tmp_path_factory, mechanism, record, position):
    data = list(GOOD)
    data[position] = record
    ledger = PrivacyLedger(budget=(5.0, 1e-6))
    path = tmp_path_factory.mktemp("session") / "budget.jsonl"
    session = PrivacySession(path, "bad-input", budget=(5.0, 1e-6))
    size = path.stat().st_size if path.exists() else 0
    for target in ({"ledger": ledger}, {"session": session}):
        with pytest.raises(InvalidPrivateDataError, match=r"\by\b"):
            pymc_dp.sample(
                5,
                model=_model(mechanism, data),
                epsilon=1.0,
                mechanism=mechanism,
                progressbar=False,
                **target,
            )
    assert ledger.events == () and len(session.events) == 0
    assert (path.stat().st_size if path.exists() else 0) == size
