"""Map values between variables' constrained space and PyMC's value (transformed) space.

Step methods write *value* variables, which live in transformed space (log-odds for Beta,
the simplex transform for Dirichlet): draws are mapped through
``model.rvs_to_transforms[rv].forward`` and current values read back through ``backward``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

__all__ = ["compile_transforms", "forward_transform"]


def compile_transforms(
    model: pm.Model, rvs: Sequence, direction: str, mode: str | None = "FAST_RUN"
) -> Callable[..., list[np.ndarray]]:
    """One compiled function mapping the values of ``rvs`` at once, in ``direction``.

    ``direction="forward"`` maps draws on the support to value-variable space, ``"backward"``
    the reverse; variables without a transform pass through. The default C-backed mode
    compiles in a fraction of a second and costs tens of µs per call.
    """
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    inputs, outputs = [], []
    for rv in rvs:
        value = model.rvs_to_values[rv]
        ndim = (rv if direction == "forward" else value).type.ndim
        x = pt.tensor(dtype="float64", shape=(None,) * ndim)  # one compiled graph for all sizes
        transform = model.rvs_to_transforms.get(rv)
        inputs.append(x)
        outputs.append(
            x if transform is None else getattr(transform, direction)(x, *rv.owner.inputs)
        )
    function = pytensor.function(inputs, outputs, on_unused_input="ignore", mode=mode)
    return lambda *values: function(*values)


def forward_transform(
    model: pm.Model, rv, mode: str | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """Compiled map from ``rv``'s support to its value variable's space (identity if none)."""
    if model.rvs_to_transforms.get(rv) is None:
        return lambda x: x
    function = compile_transforms(model, [rv], "forward", mode)
    return lambda x: function(x)[0]
