"""Chains and their seeds as ``pm.sample`` sets them, for the samplers that run the private
model outside PyMC's NUTS (:mod:`pymc_dp.routes.blackjax_nuts`,
:mod:`pymc_dp.routes.nutpie_nuts`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["chain_count", "chain_seeds"]


def chain_seeds(random_seed, chains: int) -> list[int]:
    """One seed per chain, derived from ``random_seed`` as ``pm.sample`` derives them (a
    generator spawned per chain; any form ``pm.sample`` takes, any length of sequence)."""
    from pymc.util import get_random_generator

    return [int(rng.integers(2**30)) for rng in get_random_generator(random_seed).spawn(chains)]


def chain_count(kwargs: Mapping) -> int:
    """``chains`` as ``pm.sample`` defaults it: max(2, cores), cores at most 4 CPUs."""
    if kwargs.get("chains") is not None:
        return int(kwargs["chains"])
    cores = kwargs.get("cores")
    cores = min(4, os.cpu_count() or 1) if cores is None else int(cores)
    return max(2, cores)
