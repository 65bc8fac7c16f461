"""What every route receives: one private run's request, already checked by ``sample``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm

from pymc_dp.ledger import PrivacyLedger

__all__ = ["RunRequest"]


@dataclass
class RunRequest:
    """The options of one :func:`pymc_dp.sample` call that a route needs.

    ``noise`` is the statistics route's noise (``"laplace"`` or ``"gaussian"``, then ``delta``
    is the run's δ); ``accounting`` the posterior-sampling routes' calibration (``"basic"``
    or ``"tight"``). ``sample_kwargs`` are passed to ``pm.sample`` after the route has
    removed or checked those that could see unreleased draws.
    """

    model: pm.Model
    draws: int
    mechanism: str
    epsilon: float | Mapping[str, float] | None
    delta: float
    neighbouring: str
    release: str | None
    ledger: PrivacyLedger
    noise_backend: str = "opendp"
    noise_rng: np.random.Generator | None = None
    max_trials: Mapping[str, int] | None = None
    data_bounds: Mapping[str, tuple[float, float]] | None = None
    disjoint: Sequence[Sequence[str]] = ()
    tempering: str | None = None
    step: Any = None
    public: frozenset[str] = frozenset()
    assume_rejection_bound: bool = False
    inference: str | None = None
    noise: str = "laplace"
    accounting: str = "basic"
    sample_kwargs: dict[str, Any] = field(default_factory=dict)
