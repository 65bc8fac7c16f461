"""Private Metropolis through ``pymc_dp.sample``: several chains, several cores, netCDF.

The chains run in worker processes (``cores=2``); the ledger event is recorded in the parent,
once, for all chains, and survives a netCDF round trip of the trace. The audit of the step's
temperature is in :mod:`tests.routes.test_public_audits`.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.families.bounds import bernoulli_log_likelihood_bound

DATA = np.array([1, 0, 0, 1, 1])
CHAINS, DRAWS, TUNE = 2, 20, 10


def _model():
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.05)
        pm.Bernoulli("y", p=rate, observed=DATA)
    return model


@pytest.fixture(scope="module", params=["last", "chain"])
def two_core_run(request):
    """One run per release, two chains on two cores; the ledger the caller passed in."""
    release = request.param
    ledger = PrivacyLedger(budget=(10.0, 0.5))
    extra = {"delta": 0.1, "assume_rejection_bound": True} if release == "chain" else {}
    idata = pymc_dp.sample(
        DRAWS,
        tune=TUNE,
        chains=CHAINS,
        cores=2,
        model=_model(),
        epsilon=2.0,
        mechanism="metropolis",
        release=release,
        proposal_scale=0.5,
        ledger=ledger,
        random_seed=3,
        noise_rng=np.random.default_rng(3),
        progressbar=False,
        **extra,
    )
    return release, ledger, idata


@pytest.mark.integration
def test_two_chains_on_two_cores_charge_once_in_the_parent(two_core_run):
    release, ledger, idata = two_core_run
    (event,) = ledger.events  # one event for both chains, recorded by this process
    assert PrivacyLedger.from_datatree(idata).events == (event,)
    bound = bernoulli_log_likelihood_bound(0.05)
    if release == "last":
        # ε/chains per chain, one released draw each
        assert event.temperature == pytest.approx(2 * bound * CHAINS / 2.0)
        assert (event.epsilon, event.delta) == (pytest.approx(2.0), 0.0)
        assert event.assumes_convergence
        assert dict(idata["posterior"].sizes) == {"chain": CHAINS, "draw": 1}
    else:
        n_steps = CHAINS * (TUNE + DRAWS)  # every step of both chains, tuning included
        assert event.temperature == pytest.approx(2 * bound * n_steps / 2.0)
        assert (event.epsilon, event.delta) == (pytest.approx(2.0), 0.1)
        assert event.unverified_assumption  # not a guarantee
        assert dict(idata["posterior"].sizes) == {"chain": CHAINS, "draw": DRAWS}
    draws = idata["posterior"]["rate"].values
    assert np.all((draws >= 0.05) & (draws <= 0.95))
    # the two chains are different chains (independent generators), not one copied
    assert not np.array_equal(draws[0], draws[1]) or release == "last"
    for group in ("observed_data", "constant_data", "log_likelihood"):
        assert group not in idata.children


def test_netcdf_round_trip_keeps_the_ledger(two_core_run, tmp_path):
    release, ledger, idata = two_core_run
    path = tmp_path / f"metropolis_{release}.nc"
    idata.to_netcdf(path, engine="h5netcdf")
    reopened = xr.open_datatree(path, engine="h5netcdf")
    try:
        restored = PrivacyLedger.from_datatree(reopened)
        assert restored.events == ledger.events
        (event,) = restored.events
        assert event.mechanism == "metropolis" and math.isfinite(event.temperature)
        np.testing.assert_array_equal(
            reopened["posterior"]["rate"].values, idata["posterior"]["rate"].values
        )
        assert set(reopened.children) == set(idata.children)
    finally:
        reopened.close()
