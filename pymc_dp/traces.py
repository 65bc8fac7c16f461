"""What a private trace may hold: group filtering, last-draw releases and leaky options.

``pm.sample`` returns groups that read raw data (``observed_data``, ``constant_data``,
``log_likelihood``) and offers options that see every draw (``callback``, custom ``trace``
backends, kept tuning draws, convergence checks). Every private path filters its trace here.
"""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

__all__ = [
    "RELEASED_GROUP",
    "SAFE_GROUPS",
    "UNRELEASED_ATTRS",
    "keep_groups",
    "last_draw",
    "refuse_leaky_options",
]

SAFE_GROUPS: tuple[str, ...] = (
    "posterior",
    "sample_stats",
    "warmup_posterior",
    "warmup_sample_stats",
)
"""Groups of ``pm.sample``'s DataTree that a private trace may keep (none reads raw data)."""
RELEASED_GROUP = "released_statistics"
"""DataTree group holding the released noisy statistics (public by construction)."""


def keep_groups(idata: xr.DataTree, groups: Sequence[str] = SAFE_GROUPS) -> xr.DataTree:
    """Delete every child group of ``idata`` not in ``groups``, in place; returns it."""
    for name in list(idata.children):
        if name not in groups:
            del idata[name]
    return idata


UNRELEASED_ATTRS: tuple[str, ...] = ("sampling_time",)
"""Group attributes measured over every draw (timing): dropped when only the last is kept."""


def last_draw(idata: xr.DataTree, groups: Sequence[str] = ("posterior",)) -> xr.DataTree:
    """A trace with only the last draw of each chain, of ``groups`` only.

    Sampler statistics are left out by default: they can read the draws before the last.
    Attributes measured over the whole run (:data:`UNRELEASED_ATTRS`) are dropped.
    """
    datasets = {}
    for name in groups:
        dataset = idata[name].to_dataset().isel(draw=[-1])
        dataset.attrs = {k: v for k, v in dataset.attrs.items() if k not in UNRELEASED_ATTRS}
        datasets[name] = dataset
    return xr.DataTree.from_dict(datasets)


def refuse_leaky_options(kwargs) -> None:
    """Refuse ``pm.sample`` options that would expose draws other than the last of each chain.

    Kept tuning draws, convergence checks (and PyMC's warnings, which read every draw), a
    ``callback``, a custom ``trace`` backend and the progress bar (divergences, step sizes and
    gradient counts of unreleased sweeps) all see the whole chain while only its last draw is
    released and charged. Sets ``compute_convergence_checks=False`` and ``progressbar=False``.

    Raises
    ------
    ValueError
        If one of those options is asked for.
    """
    if kwargs.get("progressbar"):
        raise ValueError(
            "only the last draw is released: the progress bar would show statistics of the "
            "unreleased sweeps (divergences, step sizes); drop progressbar"
        )
    kwargs["progressbar"] = False
    if kwargs.get("discard_tuned_samples", True) is False:
        raise ValueError("only the last draw is released: tuning draws cannot be kept")
    if kwargs.get("compute_convergence_checks"):
        raise ValueError("only the last draw is released: convergence checks read every draw")
    for option in ("callback", "trace"):
        if kwargs.get(option) is not None:
            raise ValueError(f"only the last draw is released: {option!r} would see every draw")
    kwargs["compute_convergence_checks"] = False
