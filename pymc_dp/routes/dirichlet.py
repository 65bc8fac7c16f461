"""``pymc_dp.sample`` with ``mechanism="dirichlet-lsdim" | "dirichlet-lshist" | "dirichlet-ehd" |
"dirichlet-ehds"``: one private Dirichlet posterior, then exact draws from it.

Source: the note (Dirichlet/Hellinger mechanisms, 2020), Algorithms 1, 2, 3 and 5 and
Theorem 3.1 (:mod:`pymc_dp.mechanisms.dirichlet`, which owns the mechanisms and their
calibration). The model is the note's setting: records ``x`` in k categories,
``pm.Categorical("x", p=p, observed=...)`` with ``p = pm.Dirichlet("p", a=alpha)``, α a constant
of the model (:func:`pymc_dp.analysis.conjugate.find_dirichlet_posterior`). Each mechanism
releases the parameters α̃ of one Dirichlet; the trace's ``p`` are independent draws from
Dir(α̃), by :class:`~pymc_dp.PrivateConjugateGibbs` on the private model whose released
table is α̃ − α (deterministics of ``p`` and free variables that read no record are sampled as
usual). Every draw, chain and tuning step is post-processing of the one release.

Guarantee: (ε, 0)-DP under replace-one neighbours on datasets of the observed array's size n,
which replace-one treats as public (the size of the observed vector is part of the model).
Order: refuse and validate (the recogniser) → check the options → the release (validate →
enumerate R_α → check the budget and record the event → draw) → sample → strip.

When to prefer which (the note, §4; ``docs/dirichlet_mechanisms.md``): EHD/EHDS score every
candidate posterior by its Hellinger distance and win at small n; LSHist (Laplace noise on the
first k − 1 counts) wins as n grows (the crossover of Corollaries 4.5.1–4.5.3), and needs no
enumeration of R_α, whose size C(n + k − 1, k − 1) bounds where EHD and EHDS can run
(:data:`~pymc_dp.mechanisms.dirichlet.MAX_CANDIDATES`). LSDim is the note's baseline: the
same release as LSHist with more noise whenever k > 2. EHDS uses γ = 1, the largest γ for
which it is ε-DP and the one with the least noise. EHDL is not differentially private and has
no route.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_dp.analysis import Recognised
from pymc_dp.analysis.conjugate import DirichletPosteriorBlock
from pymc_dp.ledger import split_epsilon, validate_delta
from pymc_dp.mechanisms.dirichlet import DP_RELEASES, category_counts
from pymc_dp.mechanisms.statistics import ReleasedStatistics
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.laplace import sample_released
from pymc_dp.traces import RELEASED_GROUP

__all__ = ["DIRICHLET_MECHANISMS", "release_dirichlet_posterior", "run_dirichlet"]

DIRICHLET_MECHANISMS: tuple[str, ...] = tuple(DP_RELEASES)
"""The Dirichlet posterior releases offered by ``pymc_dp.sample`` (EHDL is not one)."""

_LAPLACE = ("dirichlet-lsdim", "dirichlet-lshist")


def run_dirichlet(request: RunRequest, recognised: Recognised) -> xr.DataTree:
    """Release the recognised Dirichlet posterior with ``request.mechanism``, then sample it.

    Returns
    -------
    xarray.DataTree
        As the statistics route: ``posterior``, ``sample_stats``, ``released_statistics``
        (``<observed>``: the released α̃ − α, one row; attributes ``mechanism`` and
        ``alpha``); the caller attaches the ledger.

    Raises
    ------
    ValueError
        For add/remove-one neighbours, δ > 0, ``release``, ``tempering``, ``step`` or a
        missing epsilon (nothing released); an infeasible candidate set (EHD, EHDS).
    InvalidPrivateDataError
        For records outside 0..k − 1 (raised by the recogniser, before this route).
    BudgetExceededError
        If the release would exceed the budget (nothing released).
    """
    mechanism = request.mechanism
    if request.neighbouring != "replace-one":
        raise ValueError(
            f"mechanism={mechanism!r} is ε-DP under replace-one neighbours on datasets of public "
            "size n (the note's relation); add/remove-one is not supported. Nothing was released."
        )
    validate_delta(request.delta)
    if request.delta != 0.0:
        raise ValueError(
            f"delta={request.delta!r} was given, but mechanism={mechanism!r} is (ε, 0)-DP and "
            "spends no δ. Nothing was released."
        )
    for option, value in (
        ("release", request.release),
        ("tempering", request.tempering),
        ("step", request.step),
    ):
        if value is not None:
            raise ValueError(
                f"{option} is not an option of mechanism={mechanism!r}: it releases one "
                "Dirichlet posterior and every draw from it is free. Nothing was released."
            )
    if request.epsilon is None:
        raise ValueError(f"epsilon is required for mechanism={mechanism!r}")
    release = release_dirichlet_posterior(request, recognised.blocks)
    trace = sample_released(request, [release], "plugin")
    trace[RELEASED_GROUP].attrs["mechanism"] = mechanism
    trace[RELEASED_GROUP].attrs["alpha"] = np.asarray(recognised.blocks.alpha, dtype=np.float64)
    return trace


def release_dirichlet_posterior(
    request: RunRequest, block: DirichletPosteriorBlock
) -> ReleasedStatistics:
    """Release α̃ with ``request.mechanism`` and return it as the released table α̃ − α.

    Guarantee and errors: those of the mechanism in
    :data:`~pymc_dp.mechanisms.dirichlet.DP_RELEASES` (one event in ``request.ledger``).
    """
    link, alpha = block.link, block.alpha
    (epsilon,) = split_epsilon(request.epsilon, [link.observed]).values()
    variables = (link.observed, link.prior)
    if link.summary is not None:  # records in a Dask collection: validated, counted in one pass
        counts = link.statistics()[0].astype(np.int64)
    else:
        counts = category_counts(link.data, alpha.size, variables)
    options = {"epsilon": epsilon, "ledger": request.ledger, "variables": variables}
    if request.mechanism in _LAPLACE:
        options["backend"] = request.noise_backend
    options["rng"] = request.noise_rng
    released = DP_RELEASES[request.mechanism](counts, alpha, **options)
    event = request.ledger.events[-1]
    table = (released - alpha)[None, :]
    laplace = request.mechanism in _LAPLACE
    return ReleasedStatistics(
        link.observed,
        link.prior,
        link.family.name,
        table,
        table,
        event,
        scale=float(event.noise_scale) if laplace else float("nan"),
        neighbouring="replace-one",
        noise="laplace" if laplace else "exponential",
    )
