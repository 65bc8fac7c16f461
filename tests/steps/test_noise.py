"""The flag of a posterior-sampling run seeded from noise_rng (review finding 4)."""

from __future__ import annotations

from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, seeded_noise_assumption
from pymc_dp.mechanisms import laplace
from pymc_dp.steps.noise import SEEDED_DRAWS_ASSUMPTION, flag_seeded_draws


def _event(**fields):
    return PrivacyEvent(
        mechanism="ops",
        epsilon=1.0,
        delta=0.0,
        sensitivity=2.0,
        neighbouring="replace-one",
        variables=("rate",),
        noise_backend="numpy",
        statistic="one draw",
        source="test",
        **fields,
    )


def test_seeded_draws_are_flagged_like_the_numpy_laplace_backend():
    (flagged,) = flag_seeded_draws([_event()], seeded=True)
    assert flagged.unverified_assumption == SEEDED_DRAWS_ASSUMPTION
    # one wording for every NumPy-drawn noise: the Laplace backend's is the same function's
    assert laplace._NUMPY_ASSUMPTION == seeded_noise_assumption(
        "NumPy floating-point Laplace noise"
    )
    assert SEEDED_DRAWS_ASSUMPTION.endswith(laplace._NUMPY_ASSUMPTION.split(" noise ", 1)[1])
    assert not PrivacyLedger(events=[flagged]).guaranteed


def test_fresh_entropy_is_not_flagged_and_other_assumptions_are_kept():
    event = _event()
    assert flag_seeded_draws([event], seeded=False) == [event]
    (both,) = flag_seeded_draws([_event(unverified_assumption="Pr(reject) <= 0.01")], seeded=True)
    assert both.unverified_assumption == f"Pr(reject) <= 0.01; {SEEDED_DRAWS_ASSUMPTION}"
