"""Chains, their seeds and the options checked before the release, for the samplers that run
the private model outside PyMC's NUTS (:mod:`pymc_dp.routes.blackjax_nuts`,
:mod:`pymc_dp.routes.nutpie_nuts`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["chain_count", "chain_seeds", "refuse_unhonoured_options"]


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


def refuse_unhonoured_options(
    sampler: str, kwargs: Mapping, options, inits, nuts_keys
) -> None:
    """Refuse, before any release, ``pm.sample`` options ``nuts_sampler=sampler`` cannot
    honour: a name outside ``options``, an ``init`` outside ``inits``, ``tune`` < 1 (the
    adaptation sets the step size and mass matrix), ``discard_tuned_samples=False`` (no
    tuning draws are kept), a ``nuts={...}`` key outside ``nuts_keys``.

    Raises
    ------
    ValueError
        Naming the option. Nothing was released.
    """
    for name in kwargs:
        if name not in options:
            raise ValueError(
                f"{name!r} is not supported with nuts_sampler={sampler!r} (it takes "
                f"{sorted(options)}). Nothing was released."
            )
    init = str(kwargs.get("init", "auto")).lower()
    if init not in inits:
        raise ValueError(
            f"init={kwargs.get('init')!r} is not supported with nuts_sampler={sampler!r} "
            f"(it takes {tuple(inits)}). Nothing was released."
        )
    if kwargs.get("tune") is not None and int(kwargs["tune"]) < 1:
        raise ValueError(
            f"nuts_sampler={sampler!r} needs tune >= 1 (its adaptation sets the step size "
            "and mass matrix). Nothing was released."
        )
    if kwargs.get("discard_tuned_samples", True) is not True:
        raise ValueError(
            f"nuts_sampler={sampler!r} keeps no tuning draws: drop discard_tuned_samples. "
            "Nothing was released."
        )
    nuts = kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {}
    for key in nuts:
        if key not in nuts_keys:
            raise ValueError(
                f"nuts={{{key!r}: ...}} is not supported with nuts_sampler={sampler!r} (it "
                f"takes {sorted(nuts_keys)}). Nothing was released."
            )
