"""Read a prior's parameters at the current point of a chain.

A conjugate step draws a variable from a posterior whose prior parameters may depend on other
free variables (hyperpriors). :func:`parameter_function` compiles the parameters as a function
of the value variables they depend on, or evaluates them once when they are constant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pymc as pm
import pytensor
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors

__all__ = ["constant_values", "parameter_function"]


def parameter_function(
    model: pm.Model, parameters: Sequence[Variable]
) -> tuple[Callable[[dict], tuple[np.ndarray, ...]], bool]:
    """(point → parameter values as float64 arrays, whether they are constant).

    ``parameters`` are graphs of ``model`` (e.g. a prior's ``dist_params``); free random
    variables in them are read from the point through their value variables.
    """
    random = set(model.free_RVs)
    if not any(a in random for a in ancestors(list(parameters))):
        values = constant_values(parameters)
        return (lambda point: values), True
    outputs = model.replace_rvs_by_values(list(parameters))
    value_vars = set(model.value_vars)
    inputs = [a for a in ancestors(outputs) if a in value_vars]
    fn = model.compile_fn(outputs, inputs=inputs, point_fn=False, on_unused_input="ignore")
    names = [v.name for v in inputs]
    return (
        lambda point: tuple(
            np.asarray(v, dtype=np.float64) for v in fn(*(point[name] for name in names))
        )
    ), False


def constant_values(variables: Sequence[Variable]) -> tuple[np.ndarray, ...]:
    """Values of graphs that read no random variable, as float64 arrays.

    A constant (the usual prior parameter: a number or a NumPy array given to the
    distribution) is read directly; any other graphs are evaluated together, once, by one
    function compiled for a single call (``FAST_COMPILE``: no optimisation, no JIT).
    """
    values: list[np.ndarray | None] = [
        np.array(v.data, dtype=np.float64) if isinstance(v, Constant) else None for v in variables
    ]
    pending = [i for i, v in enumerate(values) if v is None]
    if pending:
        evaluate = pytensor.function(
            [], [variables[i] for i in pending], mode="FAST_COMPILE", on_unused_input="ignore"
        )
        for i, value in zip(pending, evaluate(), strict=True):
            values[i] = np.asarray(value, dtype=np.float64)
    return tuple(values)
