"""A step whose release no longer matches the model's records is refused (review finding 3).

``PrivateConjugateGibbs`` releases when it is built; ``pm.set_data`` on the observed data
afterwards, then ``pymc_dp.sample(step=step)``, used to return the old release's posterior
silently. The release keeps a keyed digest of the exact statistics it was computed from
(never the records), compared with the model's at sample time, before anything is charged.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import PrivacyLedger, StaleReleaseError
from pymc_dp.analysis import recognise
from pymc_dp.mechanisms.statistics import require_current_release, statistics_digest

FIRST = np.array([1, 0, 1, 1, 0, 1, 1, 0])
SECOND = np.array([0, 0, 0, 1, 0, 0, 0, 0])


def _model():
    with pm.Model() as model:
        y = pm.Data("y_records", FIRST)
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=y)
    return model


def _step(model, ledger):
    with model:
        return pymc_dp.PrivateConjugateGibbs(epsilon=1.0, ledger=ledger)


def test_set_data_after_the_release_is_refused_before_anything_is_charged():
    ledger = PrivacyLedger()
    model = _model()
    step = _step(model, ledger)
    with model:
        pm.set_data({"y_records": SECOND})
    run_ledger = PrivacyLedger()
    with pytest.raises(StaleReleaseError, match=r"^y: the step's release was made from other"):
        pymc_dp.sample(5, step=step, model=model, ledger=run_ledger, progressbar=False)
    assert len(run_ledger) == 0 and len(ledger) == 1  # the step's own release only


def test_the_digest_matches_the_same_records_and_holds_no_value():
    model = _model()
    (release,) = _step(model, PrivacyLedger()).releases
    link = recognise(model, "laplace").blocks["y"]
    require_current_release(release, link)  # unchanged records: accepted
    assert release.records_digest == statistics_digest([[5.0, 3.0]])  # Σy, n − Σy of FIRST
    assert release.records_digest != statistics_digest([[1.0, 7.0]])
    assert "records_digest" not in repr(release)
    with model:
        pm.set_data({"y_records": FIRST[::-1].copy()})  # same statistics: same release
    require_current_release(release, recognise(model, "laplace").blocks["y"])
    with pytest.raises(StaleReleaseError):
        require_current_release(release, None)  # no such observed variable now
