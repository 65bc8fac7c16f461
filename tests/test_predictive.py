"""pymc_dp.sample_posterior_predictive reads only public constants of the model it is given."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.ledger import LEDGER_ATTR

SECRET_SIGMA = 0.0123  # a private value: it must not shape the predictive draws


def _private_trace() -> xr.DataTree:
    """A trace as pymc_dp.sample returns it: released draws of mu and a ledger."""
    posterior = xr.Dataset({"mu": (("chain", "draw"), np.full((1, 20), 0.5))})
    tree = xr.DataTree.from_dict({"posterior": posterior})
    tree.attrs[LEDGER_ATTR] = PrivacyLedger().to_json()
    return tree


@pytest.mark.parametrize("wrap", ["data", "data_expression"])
def test_a_data_container_read_by_sigma_is_refused(wrap):
    """Adversarial review: the predictive read a private pm.Data sigma from the model it was
    given (one pymc_dp.sample had refused) and its draws' sd revealed it (0.0121 against
    0.0123). Drew before this check."""
    with pm.Model() as model:
        sigma = pm.Data("sig", SECRET_SIGMA)
        mu = pm.Normal("mu", 0.5, 1)
        pm.Normal("y", mu, sigma if wrap == "data" else 2 * sigma, observed=np.full(10, 0.5))
    with pytest.raises(NonPrivateModelError, match=r"^y: sigma reads pm.Data \['sig'\]") as caught:
        pymc_dp.sample_posterior_predictive(_private_trace(), model=model, random_seed=1)
    assert "0.0123" not in str(caught.value)


def test_a_constant_sigma_still_gives_its_predictive():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.5, 1)
        pm.Normal("y", mu, 2.0, observed=np.full(10, 0.5))
    idata = pymc_dp.sample_posterior_predictive(
        _private_trace(), model=model, records_per_group=50, random_seed=1
    )
    draws = idata["posterior_predictive"]["y"].values
    assert draws.shape == (1, 20, 50)
    assert abs(draws.std() - 2.0) < 0.2  # 1,000 draws of N(0.5, 2): s.e. of the sd ≈ 0.045
