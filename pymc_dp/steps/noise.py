"""Keep the randomness of a posterior-sampling step secret: it is the privacy noise.

For the Laplace path the sampler's randomness is post-processing, but for posterior sampling
(one posterior sample, exponential-mechanism Gibbs, private Metropolis) the draws *are* the
mechanism: anyone who knows the generator's state can invert a released draw. An inverse-CDF
draw θ = F⁻¹(u; statistics) with a known u reveals the statistics exactly. PyMC seeds every
step from ``random_seed``, which users publish for reproducibility, so these steps mix a secret
entropy into each chain's generator (:class:`SecretNoise`): chains stay independent (each gets
its own PyMC generator), the public seed alone reproduces nothing, and a run is reproducible
only for whoever holds the secret ``noise_seed``.

A ``noise_seed`` drawn from a seeded ``noise_rng`` (tests, simulations) makes the released
draws reproducible by whoever knows that seed: every route that takes one flags its events
with the same ``unverified_assumption`` as the NumPy Laplace and Gaussian backends
(:func:`flag_seeded_draws`, ``pymc_dp.ledger.seeded_noise_assumption``), so the ledger
says it is not a guarantee.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterable

import numpy as np
from pymc.util import get_random_generator

from pymc_dp.ledger import PrivacyEvent, seeded_noise_assumption

__all__ = ["SEEDED_DRAWS_ASSUMPTION", "SecretNoise", "flag_seeded_draws", "noise_seed_from"]

SEEDED_DRAWS_ASSUMPTION = seeded_noise_assumption(
    "NumPy sampler draws (the privacy noise) seeded from a given noise_rng"
)
"""The ``unverified_assumption`` of a posterior-sampling run seeded from ``noise_rng``."""


def noise_seed_from(noise_rng: np.random.Generator | None) -> int | None:
    """A secret ``noise_seed`` drawn from ``noise_rng`` (None: fresh OS entropy later)."""
    return None if noise_rng is None else int(noise_rng.integers(2**63))


def flag_seeded_draws(events: Iterable[PrivacyEvent], *, seeded: bool) -> list[PrivacyEvent]:
    """``events``, each flagged with :data:`SEEDED_DRAWS_ASSUMPTION` (added to any assumption
    it states) when the run's draws are ``seeded`` from a given ``noise_rng``, whose seed
    replays them; unchanged when the secret is fresh OS entropy."""
    if not seeded:
        return list(events)
    return [
        dataclasses.replace(
            event,
            unverified_assumption="; ".join(
                a for a in (event.unverified_assumption, SEEDED_DRAWS_ASSUMPTION) if a
            ),
        )
        for event in events
    ]


class SecretNoise:
    """Mixin for PyMC steps whose draws are a privacy mechanism.

    The step's generator is seeded from (secret entropy, two integers from the generator PyMC
    hands the chain). The secret is ``noise_seed`` when given (tests, simulations; keep it
    private) and 128 bits from :mod:`secrets` otherwise.
    """

    _noise_entropy: int | None = None

    def _init_noise(self, noise_seed: int | None, rng, secret: bool = True) -> None:
        if secret:
            self._noise_entropy = secrets.randbits(128) if noise_seed is None else int(noise_seed)
        self.rng = self._chain_generator(rng)

    def _chain_generator(self, rng) -> np.random.Generator:
        public = get_random_generator(rng, copy=False)
        if self._noise_entropy is None:
            return public
        mixed = [self._noise_entropy, *public.integers(2**63, size=2).tolist()]
        return np.random.default_rng(mixed)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Called by PyMC before each chain: a fresh generator, secret entropy mixed in."""
        self.rng = self._chain_generator(rng)
