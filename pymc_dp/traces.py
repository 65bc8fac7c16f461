"""What a private trace may hold: group filtering, last-draw releases and leaky options.

``pm.sample`` returns groups that read raw data (``observed_data``, ``constant_data``,
``log_likelihood``) and offers options that see every draw (``callback``, custom ``trace``
backends, kept tuning draws, convergence checks). Every private path filters its trace here.
:func:`shared_function_trace` is an in-memory trace backend whose chains share one point
function (in NumPy for a model of released Beta/Dirichlet statistics).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from pymc.backends.ndarray import NDArray

from pymc_dp.steps.transforms import numpy_transform

__all__ = [
    "RELEASED_GROUP",
    "SAFE_GROUPS",
    "UNRELEASED_ATTRS",
    "keep_groups",
    "last_draw",
    "refuse_leaky_options",
    "shared_function_trace",
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


def discard_on_error[T](sample: Callable[[], T]) -> T:
    """Run ``sample`` (a route's ``pm.sample`` and its stripping); if it raises, clear the
    local variables of every finished frame of the traceback before the error propagates, so
    a caller that catches it cannot read the unreleased draws (a ``release="last"`` route
    samples a whole chain and releases its last draw). The error itself is re-raised."""
    try:
        return sample()
    except BaseException as error:
        traceback.clear_frames(error.__traceback__)
        raise


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


class _SharedFunctionNDArray(NDArray):
    """PyMC's ``NDArray`` backend whose chains share one point function.

    ``pm.sample(trace=template)`` copies the template once per chain; each copy gets empty
    sample arrays of its own (a plain shallow copy would share them) and the template's
    function, shapes and dtypes, as ``NDArray`` does for its own slices.

    With a :class:`_ValuePointFunction` a draw records the value variables only, and the
    back-transformed variables are filled in from them, vectorised over the draws not yet
    mapped, before anything reads the trace (``get_values``, ``point``, slices, ``close``).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._mapped = 0  # draws whose back-transformed values are filled in

    def __copy__(self) -> _SharedFunctionNDArray:
        return type(self)(
            model=self.model,
            vars=self.vars,
            fn=self.fn,
            var_shapes=self.var_shapes,
            var_dtypes=self.var_dtypes,
        )

    def _map_back(self) -> None:
        start, stop = self._mapped, self.draw_idx
        if stop > start and isinstance(self.fn, _ValuePointFunction):
            for name, source, backward in self.fn.derived:
                self.samples[name][start:stop] = backward(self.samples[source][start:stop])
        self._mapped = stop

    def get_values(self, varname: str, burn=0, thin=1) -> np.ndarray:
        self._map_back()
        return super().get_values(varname, burn, thin)

    def point(self, idx) -> dict:
        self._map_back()
        return super().point(idx)

    def _slice(self, idx: slice):
        self._map_back()
        sliced = super()._slice(idx)
        sliced._mapped = sliced.draw_idx
        return sliced

    def close(self) -> None:
        self._map_back()
        super().close()


class _ValuePointFunction:
    """Point function of a trace whose outputs are the value variables and NumPy
    back-transforms of some of them (``derived``: output name, value name, backward map).

    Called per draw it returns the value variables only: ``NDArray.record`` stores the
    outputs it gets, in order, and :class:`_SharedFunctionNDArray` fills in ``derived``.
    """

    def __init__(self, derived: list[tuple[str, str, object]]) -> None:
        self.derived = derived

    def __call__(self, *values):
        return values


def shared_function_trace(model: pm.Model, point_function=None) -> NDArray | None:
    """A ``trace=`` template for ``pm.sample``: one point function for every chain.

    PyMC's default builds one ``NDArray`` per chain, and each compiles the same function of
    the value variables (outputs ``model.unobserved_value_vars``: the value variables, the
    transformed variables mapped back, the Deterministics) and evaluates it at the initial
    point for the shapes. Here the shapes are the variables' static shapes (or
    ``model.eval_rv_shapes()``) and the function is built once. When the model has no
    Deterministic and every transform is PyMC's ``logodds`` or ``simplex`` (a model of
    released Beta/Dirichlet statistics), nothing is compiled: a draw records the value
    variables, and the variables are mapped back with
    :func:`pymc_dp.steps.transforms.numpy_transform`, vectorised over draws, when the trace
    is read. Otherwise the function is compiled exactly as PyMC compiles it. Returns None
    (use PyMC's default) when a Deterministic's shape is not fixed by the graph.

    ``point_function``: the ``fn`` of a template built before on this same model, reused
    instead of compiled again (:func:`pymc_dp.routes.compiled.compiled_private_model`).
    """
    trace_vars = model.unobserved_value_vars
    shapes = _trace_shapes(model, trace_vars)
    if shapes is None:
        return None
    fn = point_function if point_function is not None else _value_point_function(model, trace_vars)
    if fn is None:
        fn = model.compile_fn(
            outs=[pytensor.Out(v, borrow=True) for v in trace_vars],
            inputs=[pytensor.In(v, borrow=True) for v in model.value_vars],
            point_fn=False,
            on_unused_input="ignore",
            trust_input=True,
        )
        try:  # the first call (JIT dispatch) here, as NDArray's evaluation for the shapes
            fn(*(np.zeros(shapes[v.name], dtype=v.dtype) for v in model.value_vars))
        except Exception:  # a warm-up at an arbitrary point only: errors recur at a draw
            pass
    return _SharedFunctionNDArray(
        model=model,
        vars=trace_vars,
        fn=fn,
        var_shapes=shapes,
        var_dtypes={v.name: np.dtype(v.dtype) for v in trace_vars},
    )


def _trace_shapes(model: pm.Model, trace_vars) -> dict[str, tuple[int, ...]] | None:
    """Shapes of ``trace_vars``: static, else ``model.eval_rv_shapes()`` (free variables and
    their value variables only); None when a Deterministic's shape is not static."""
    if all(s is not None for v in trace_vars for s in v.type.shape):
        return {v.name: tuple(int(s) for s in v.type.shape) for v in trace_vars}
    evaluated = model.eval_rv_shapes()
    if any(v.name not in evaluated for v in trace_vars):
        return None
    return {v.name: tuple(int(s) for s in evaluated[v.name]) for v in trace_vars}


def _value_point_function(model: pm.Model, trace_vars) -> _ValuePointFunction | None:
    """The point function for ``trace_vars`` (``model.unobserved_value_vars``: the value
    variables, then each transformed variable mapped back) in NumPy; None if some output
    needs PyTensor (a Deterministic, another transform)."""
    if model.deterministics:
        return None
    value_vars = model.value_vars
    transformed = [
        (value.name, model.rvs_to_transforms[rv])
        for rv, value in zip(model.free_RVs, value_vars, strict=True)
        if model.rvs_to_transforms[rv] is not None
    ]
    if len(trace_vars) != len(value_vars) + len(transformed):
        return None
    derived = []
    for output, (source, transform) in zip(trace_vars[len(value_vars) :], transformed, strict=True):
        backward = numpy_transform(transform, "backward")
        if backward is None:
            return None
        derived.append((output.name, source, backward))
    return _ValuePointFunction(derived)


def quiet_unreleased(loggers: Sequence[str] = ("pymc", "pytensor")):
    """Context manager: no log record below ERROR from ``loggers`` (and their children).

    While only the last draw of each chain is released, PyMC's DEBUG and INFO records read the
    unreleased sweeps ("Energy change in leapfrog step is too large: …" from tuning, "took N
    seconds", divergences). Every existing logger under those names is set to ERROR for the
    block, whatever level it had (a child set to DEBUG included), and restored afterwards;
    loggers created inside the block inherit ERROR.
    """
    import contextlib
    import logging

    @contextlib.contextmanager
    def quiet():
        manager = logging.Logger.manager
        names = [
            name
            for name, logger in list(manager.loggerDict.items())
            if isinstance(logger, logging.Logger)
            and any(name == root or name.startswith(root + ".") for root in loggers)
        ]
        chosen = [logging.getLogger(name) for name in {*loggers, *names}]
        saved = [(logger, logger.level) for logger in chosen]
        try:
            for logger in chosen:
                if logger.getEffectiveLevel() < logging.ERROR:
                    logger.setLevel(logging.ERROR)
            yield
        finally:
            for logger, level in saved:
                logger.setLevel(level)

    return quiet()
