"""Compile once: private models of bounded releases kept with their compiled functions.

A bounded family's private model
(:mod:`pymc_dp.families.bounded`) reads every released value from data containers
(:func:`pymc_dp.analysis.rewrite.add_released_likelihood`), so its compiled functions — the
log density and gradient NUTS integrates, the trace's point function — do not depend on a
release. They are kept, with the private model they were compiled from, in a cache of at most
:data:`CACHE_SIZE` models keyed by the private model's graph structure: a SHA-256 of its
printed graph (variables, operations, shapes, transforms, public constants such as prior
hyperparameters), its coordinates and a digest of every public value it reads (not the
released containers each call fills: :func:`structure_text`).
A later ``pymc_dp.sample`` on a model of the same structure releases afresh and is charged
as always; its releases are written into the kept model
(:func:`~pymc_dp.analysis.rewrite.use_release`) and PyMC's NUTS is built as usual
(``init_nuts``: jitter, mass matrix, step size start afresh) on the kept log density.
After sampling every released value in the kept model is overwritten with NaN
(:func:`~pymc_dp.analysis.rewrite.forget_released_statistics`): the cache holds structure and
compiled code, no release and no record (records never reach a private model).

Lives with the routes (not in :mod:`pymc_dp.compiling`) because it reads the private
models :mod:`pymc_dp.analysis.rewrite` builds; the first compile is announced with
:func:`pymc_dp.compiling.announce`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
from pymc.model.fgraph import fgraph_from_model
from pytensor.printing import debugprint

from pymc_dp.analysis.rewrite import forget_released_statistics, released_container_names
from pymc_dp.compiling import announce

__all__ = [
    "CACHE_SIZE",
    "CompiledModel",
    "clear_compiled_models",
    "compiled_private_model",
    "kept_models",
    "structure_key",
    "structure_text",
]

CACHE_SIZE = 8
"""Private models (with their compiled functions) kept for reuse, least recently used out."""


@dataclass(eq=False)
class CompiledModel:
    """A private model kept for reuse with the functions compiled from it.

    Attributes
    ----------
    key : str
        :func:`structure_key` of ``model``.
    model : pm.Model
        The private model; between calls every released value in it is NaN.
    functions : dict
        ``model.logp_dlogp_function`` results by their arguments (what NUTS integrates).
    point_function : object or None
        The trace's point function (:func:`pymc_dp.traces.shared_function_trace`).
    blackjax_runner : object or None
        The JAX functions and compiled chains of ``nuts_sampler="blackjax"``
        (:class:`pymc_dp.routes.blackjax_nuts.BlackJAXRunner`), built on first use.
    nutpie_runner : object or None
        The model compiled by nutpie for ``nuts_sampler="nutpie"``
        (:class:`pymc_dp.routes.nutpie_nuts.NutpieRunner`), built on first use.
    """

    key: str
    model: pm.Model
    functions: dict = field(default_factory=dict)
    point_function: object | None = None
    blackjax_runner: object | None = None
    nutpie_runner: object | None = None
    in_use: bool = False


_cache: OrderedDict[str, CompiledModel] = OrderedDict()
_lock = threading.Lock()
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def structure_text(model: pm.Model) -> str:
    """``model``'s graph structure in words: equal for models that compile the same.

    The printed graph of every model variable (operations, types and static shapes,
    transforms, constants, data containers by name and type), object addresses removed; the
    coordinates and dims; then a SHA-256 of the full value of every constant, data container
    and dim length the model reads (``_values_text``), except the released containers
    a call fills with its own release. Two models that differ in any public value (a
    ``pm.Data`` prior mean, a constant longer than NumPy prints, a dim length) get different
    texts: a kept model never samples with another call's values. Meant for private models,
    whose constants are public (hyperparameters, declared bounds).
    """
    fgraph, _ = fgraph_from_model(model)
    text = _ADDRESS.sub("", debugprint(fgraph.outputs, file="str", print_type=True))
    coords = sorted((name, repr(values)) for name, values in model.coords.items())
    dims = sorted((name, tuple(d)) for name, d in model.named_vars_to_dims.items())
    return text + repr((coords, dims)) + _values_text(model)


def _values_text(model: pm.Model) -> str:
    """Digests of the values (not the printed forms) a model's graph and dims read.

    Every tensor constant and tensor shared variable among the ancestors of the model's variables
    and dim lengths, in graph order, by name, dtype, shape and SHA-256 of its bytes; the
    released containers (:func:`pymc_dp.analysis.rewrite.released_container_names`) are left
    out, since each call writes its own release into them.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.type import TensorType

    released = released_container_names(model)
    outputs = list(model.named_vars.values()) + list(model.dim_lengths.values())
    digests = []
    for node in ancestors(outputs):
        if not isinstance(node.type, TensorType):  # random generators: state, not a value
            continue
        if isinstance(node, SharedVariable):
            if node.name in released:
                continue
            value = node.get_value(borrow=True)
        elif isinstance(node, Constant):
            value = node.data
        else:
            continue
        value = np.asarray(value)
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        digests.append(f"{node.name}:{value.dtype}:{value.shape}:{digest}")
    return "\n".join(digests)


def structure_key(model: pm.Model) -> str:
    """SHA-256 of :func:`structure_text`: the key of a kept private model."""
    return hashlib.sha256(structure_text(model).encode()).hexdigest()


@contextmanager
def compiled_private_model(private: pm.Model, what: str | None) -> Iterator[CompiledModel]:
    """The kept private model of ``private``'s structure, or ``private`` itself, kept.

    Yields a :class:`CompiledModel` whose ``model`` the caller fills with its releases
    (:func:`~pymc_dp.analysis.rewrite.use_release`) and samples; its
    ``logp_dlogp_function`` returns the functions compiled by a previous call. On a miss
    (first call for this structure) :func:`~pymc_dp.compiling.announce` logs that ``what``
    compiles (nothing if ``what`` is None: the caller announces what it compiles). On exit
    every released value in the model is overwritten with NaN, whether sampling succeeded
    or not. A model in use by another call (threads), or one whose graph cannot be printed,
    is not shared: ``private`` is then compiled on its own and not kept.
    """
    try:
        key = structure_key(private)
    except Exception:  # a graph PyTensor cannot print: compiled for this call only, not kept
        key = None
    with _lock:
        entry = _cache.get(key) if key is not None else None
        if entry is not None and not entry.in_use:
            _cache.move_to_end(key)
        else:
            entry = CompiledModel(key or "", private)
            _remember_functions(entry)
            if key is not None and key not in _cache:
                _cache[key] = entry
                while len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
            if what is not None:
                announce(what, True)
        entry.in_use = True
    try:
        yield entry
    finally:
        forget_released_statistics(entry.model)
        entry.in_use = False


def clear_compiled_models() -> None:
    """Forget every kept private model and its compiled functions."""
    with _lock:
        _cache.clear()


def kept_models() -> Sequence[CompiledModel]:
    """The kept models, least recently used first (for inspection and tests)."""
    with _lock:
        return list(_cache.values())


def _remember_functions(entry: CompiledModel) -> None:
    """Make ``entry.model.logp_dlogp_function`` compile once per set of arguments."""
    compile_ = entry.model.logp_dlogp_function

    def logp_dlogp_function(*args, **kwargs):
        key = _ADDRESS.sub("", repr((args, sorted(kwargs.items()))))
        if key not in entry.functions:
            entry.functions[key] = compile_(*args, **kwargs)
        return entry.functions[key]

    entry.model.logp_dlogp_function = logp_dlogp_function
