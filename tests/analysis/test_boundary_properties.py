"""Property test of the boundary: random small models with Deterministics and Potentials over
private and public arrays. A model is refused exactly when some extra variable reads a
private array (or a Potential makes the rate non-conjugate); when it is accepted, nothing
private reaches the trace. Labels and records that are all equal are generated too: whether an
array is private never depends on its values."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import NonPrivateModelError, PrivacyLedger
from pymc_dp.traces import SAFE_GROUPS

N_GROUPS = 3

# Each extra: (reads private data?, builder(rate, arrays) -> None). ``arrays`` holds the
# private records and labels and a public pm.Data container.
EXTRAS = {
    "det_public": (False, lambda k, r, a: pm.Deterministic(f"d{k}", r + a["public"].sum())),
    "det_params": (False, lambda k, r, a: pm.Deterministic(f"d{k}", 2.0 * r)),
    "det_scalar": (False, lambda k, r, a: pm.Deterministic(f"d{k}", r.sum() + 0.5)),
    "pot_prior": (False, lambda k, r, a: pm.Potential(f"p{k}", -0.5 * (r**2).sum())),
    "det_labels": (True, lambda k, r, a: pm.Deterministic(f"d{k}", r[a["group"]])),
    "det_records": (
        True,
        lambda k, r, a: pm.Deterministic(f"d{k}", r.sum() + pt.as_tensor(a["y"]).mean()),
    ),
    "det_observed": (True, lambda k, r, a: pm.Deterministic(f"d{k}", a["y_rv"].sum() + r)),
    "pot_records": (
        True,
        lambda k, r, a: pm.Potential(f"p{k}", (pt.as_tensor(a["y"]) * pt.log(r[a["group"]])).sum()),
    ),
    "det_private_data": (
        True,
        lambda k, r, a: pm.Deterministic(f"d{k}", r.sum() + pm.Data(f"x{k}", a["y"] * 1.0).sum()),
    ),
}


@st.composite
def models(draw):
    n = draw(st.integers(min_value=5, max_value=12))  # never equal to N_GROUPS or 2
    group = np.asarray(draw(st.lists(st.integers(0, N_GROUPS - 1), min_size=n, max_size=n)))
    y = np.asarray(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    extras = draw(st.lists(st.sampled_from(sorted(EXTRAS)), min_size=0, max_size=3))
    return group, y, extras


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
@pytest.mark.integration
@given(models())
def test_refused_iff_an_extra_reads_private_data_and_accepted_traces_hold_nothing_private(case):
    group, y, extras = case
    with pm.Model(coords={"group": list("abc")}) as model:
        rate = pm.Beta("rate", 1.0, 1.0, dims="group")
        y_rv = pm.Bernoulli("y", p=rate[group], observed=y)
        arrays = {
            "group": group,
            "y": y,
            "y_rv": y_rv,
            "public": pm.Data("public", np.array([0.25, 0.5])),
        }
        for k, name in enumerate(extras):
            EXTRAS[name][1](k, rate, arrays)
    ledger = PrivacyLedger()
    reads_private = any(EXTRAS[name][0] for name in extras)
    # a Potential on the rate breaks conjugacy: the Laplace route refuses it too ("also feeds")
    if reads_private or "pot_prior" in extras:
        with pytest.raises(NonPrivateModelError, match=r"reads|also feeds"):
            pymc_dp.sample(
                5,
                tune=5,
                chains=1,
                epsilon=1.0,
                model=model,
                ledger=ledger,
                public=["public"],
                progressbar=False,
            )
        assert len(ledger) == 0
        return
    idata = pymc_dp.sample(
        5,
        tune=5,
        chains=1,
        epsilon=1.0,
        model=model,
        ledger=ledger,
        public=["public"],
        progressbar=False,
        compute_convergence_checks=False,
    )
    allowed = {*SAFE_GROUPS, "released_statistics", "privacy_ledger"}
    assert set(idata.children) <= allowed
    n = y.size
    for name in idata.children:
        dataset = idata[name].to_dataset()
        for var in dataset.data_vars.values():
            # nothing has one entry per private record
            assert n not in var.shape[2:] if name in SAFE_GROUPS else n not in var.shape, name
    released = idata["released_statistics"]["y"].values
    assert released.shape == (N_GROUPS, 2)  # a noisy table, not the exact one
    exact = np.stack([np.bincount(group, y, N_GROUPS), np.bincount(group, 1 - y, N_GROUPS)], 1)
    assert not np.allclose(released, exact)
