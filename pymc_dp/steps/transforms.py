"""Map values between variables' constrained space and PyMC's value (transformed) space.

Step methods write *value* variables, which live in transformed space (log-odds for Beta,
the simplex transform for Dirichlet): draws are mapped through
``model.rvs_to_transforms[rv].forward`` and current values read back through ``backward``.

PyMC's default Beta and Dirichlet transforms (``logodds``, ``simplex``) are a few NumPy
operations each way, written out here with PyMC's formulas (:func:`numpy_transform`): a
conjugate step then compiles nothing (a PyTensor function costs tens of milliseconds to
compile and a few microseconds per call). Every other transform is compiled from its PyTensor
graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.transforms import LogOddsTransform, SimplexTransform
from scipy.special import expit

__all__ = ["compile_transforms", "forward_transform", "numpy_transform"]


def compile_transforms(
    model: pm.Model, rvs: Sequence, direction: str, mode: str | None = "FAST_RUN"
) -> Callable[..., list[np.ndarray]]:
    """One compiled function mapping the values of ``rvs`` at once, in ``direction``.

    ``direction="forward"`` maps draws on the support to value-variable space, ``"backward"``
    the reverse; variables without a transform pass through. The default mode (Numba under
    PyTensor 3) compiles in tens of milliseconds and costs a few µs per call.
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
    """Map from ``rv``'s support to its value variable's space (identity if none).

    NumPy for PyMC's own ``logodds`` and ``simplex`` transforms (exactly those classes, not
    subclasses), a compiled PyTensor function for any other transform.
    """
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return lambda x: x
    numpy_forward = numpy_transform(transform, "forward")
    if numpy_forward is not None:
        return numpy_forward
    function = compile_transforms(model, [rv], "forward", mode)
    return lambda x: function(x)[0]


def numpy_transform(transform, direction: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """NumPy version of ``transform.forward`` or ``.backward`` (last axis), or None.

    Only for PyMC's own ``logodds`` and ``simplex`` transforms (those classes exactly, not
    subclasses), whose maps read no distribution parameter.
    """
    return _NUMPY_TRANSFORMS.get((type(transform), direction))


def _logodds_forward(x: np.ndarray) -> np.ndarray:
    """:meth:`pymc.logprob.transforms.LogOddsTransform.forward`: log(x / (1 − x))."""
    x = np.asarray(x, dtype=np.float64)
    return np.log(x / (1.0 - x))


def _simplex_forward(x: np.ndarray) -> np.ndarray:
    """:meth:`pymc.logprob.transforms.SimplexTransform.forward` on the last axis:
    log x[..., :-1] − Σ log x / K."""
    log_x = np.log(np.asarray(x, dtype=np.float64))
    return log_x[..., :-1] - _sum(log_x, axis=-1, keepdims=True) / log_x.shape[-1]


def _logodds_backward(y: np.ndarray) -> np.ndarray:
    """:meth:`pymc.logprob.transforms.LogOddsTransform.backward`: expit(y)."""
    return expit(y)


def _simplex_backward(y: np.ndarray) -> np.ndarray:
    """:meth:`pymc.logprob.transforms.SimplexTransform.backward` on the last axis: z = (y, −Σ y),
    exp(z − max z) / Σ exp(z − max z), computed in place on one new array."""
    y = np.asarray(y)
    z = np.empty((*y.shape[:-1], y.shape[-1] + 1), dtype=y.dtype)
    z[..., :-1] = y
    z[..., -1] = -_sum(y, axis=-1)
    z -= _max(z, axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= _sum(z, axis=-1, keepdims=True)
    return z


_sum = np.add.reduce
_max = np.maximum.reduce
_NUMPY_TRANSFORMS: dict[tuple[type, str], Callable[[np.ndarray], np.ndarray]] = {
    (LogOddsTransform, "forward"): _logodds_forward,
    (LogOddsTransform, "backward"): _logodds_backward,
    (SimplexTransform, "forward"): _simplex_forward,
    (SimplexTransform, "backward"): _simplex_backward,
}
