"""How a Laplace release is read: the one list of inferences and the default.

Both readings are post-processing of the same release (same ledger event, no privacy cost):

* ``"noise-aware"`` (default) — the release is observed data: the true statistics are latent
  with their sampling distribution given the parameters and the Laplace density is the
  likelihood of the release (Bernstein & Sheldon, NeurIPS 2018 and 2019; Ju, Awan, Gong &
  Rao, NeurIPS 2022). Central 90% intervals cover 0.88–0.92 in every cell of
  ``docs/calibration.md``.
* ``"plugin"`` — the projected noisy statistics as if they were exact (Foulds et al. 2016,
  §4.2): intervals as narrow as without noise, so overconfident at small n·ε (coverage 0.31
  at n = 10, ε = 0.1).
"""

from __future__ import annotations

__all__ = ["DEFAULT_INFERENCE", "INFERENCES", "check_inference"]

INFERENCES: tuple[str, ...] = ("noise-aware", "plugin")
"""The readings of a Laplace release ``pymc_dp.sample(inference=...)`` takes."""
DEFAULT_INFERENCE = "noise-aware"
"""What ``pymc_dp.sample(mechanism="laplace")`` does when ``inference`` is not given."""


def check_inference(inference: str | None) -> str:
    """``inference``, or the default for None.

    Raises
    ------
    ValueError
        If ``inference`` is not one of :data:`INFERENCES`.
    """
    if inference is None:
        return DEFAULT_INFERENCE
    if inference not in INFERENCES:
        raise ValueError(f"inference must be one of {INFERENCES}, got {inference!r}")
    return inference
