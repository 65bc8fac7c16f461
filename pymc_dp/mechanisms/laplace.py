"""The Laplace mechanism on a vector of statistics.

Source: Dwork, McSherry, Nissim & Smith (2006); as used for sufficient statistics by Foulds,
Geumlek, Welling & Chaudhuri (UAI 2016), §2 eq. (2)–(3) and §3.2 eq. (16)–(17).

Guarantee: if ``sensitivity`` bounds ``||h(X) - h(X')||_1`` over every pair of neighbouring
datasets X, X' (under the stated neighbouring relation) and does not depend on the data, then
``h(X) + Laplace(sensitivity / epsilon)^d`` is (epsilon, 0)-differentially private.

Noise comes from OpenDP by default (``opendp.measurements.make_laplace``), which samples
Laplace noise exactly on the floating-point grid and so avoids the floating-point attack of
Mironov (CCS 2012). The NumPy backend exists for reproducible tests and simulations only: it is
*not* floating-point safe, and seeded noise is no noise to anyone who knows the seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Literal

import numpy as np

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.ledger import (
    PrivacyEvent,
    PrivacyLedger,
    seeded_noise_assumption,
    validate_epsilon,
    validate_neighbouring,
)

__all__ = ["NOISE_BACKENDS", "NoiseBackend", "laplace_scale", "release_laplace"]

NoiseBackend = Literal["opendp", "numpy"]
NOISE_BACKENDS: tuple[str, ...] = ("opendp", "numpy")
_SCALE_NUDGE = 1 + 2.0**-40


@cache
def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _opendp_measurement(scale: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale)


def laplace_scale(sensitivity: float, epsilon: float, backend: NoiseBackend = "opendp") -> float:
    """Laplace scale b for an (epsilon, 0)-DP release of a statistic with L1 ``sensitivity``.

    b = sensitivity / epsilon (Foulds et al. 2016, eq. 3). With the OpenDP backend b is nudged
    up by a few ulps until OpenDP's own (conservatively rounded) privacy map certifies
    ``map(sensitivity) <= epsilon``.

    Raises
    ------
    ValueError
        If ``sensitivity`` or ``epsilon`` is not finite and > 0, or the backend is unknown.

    Examples
    --------
    >>> from pymc_dp.mechanisms import laplace_scale
    >>> laplace_scale(2.0, 0.5)  # b = sensitivity / ε
    4.0
    """
    epsilon = validate_epsilon(epsilon)
    sensitivity = validate_epsilon(sensitivity, "sensitivity")
    _check_backend(backend)
    scale = sensitivity / epsilon
    if backend == "opendp":
        for _ in range(64):
            if _opendp_measurement(scale).map(sensitivity) <= epsilon:
                break
            scale *= _SCALE_NUDGE
        else:  # pragma: no cover - OpenDP's rounding is a few ulps
            raise RuntimeError("could not calibrate the OpenDP Laplace scale")
    return scale


def release_laplace(
    values: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    ledger: PrivacyLedger,
    neighbouring: str,
    variables: Sequence[str],
    statistic: str,
    source: str = "Foulds et al. 2016, §3.2, eq. (16)-(17)",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    clamping: str = "",
) -> np.ndarray:
    """Release ``values + Laplace(sensitivity / epsilon)`` noise, once, through ``ledger``.

    Order of operations: validate inputs → check the budget and record the event in
    ``ledger`` → draw the noise → return. A failed check raises before any noise is drawn
    and leaves the ledger unchanged.

    Parameters
    ----------
    values : ndarray of float, any shape
        The exact statistic h(X). Must be finite.
    sensitivity : float
        Data-independent L1 sensitivity of h under ``neighbouring``.
    epsilon : float
        Privacy cost of the release (> 0).
    ledger : PrivacyLedger
        Ledger that is charged before the noisy value is returned.
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation under which ``sensitivity`` holds.
    variables : sequence of str
        Model variables whose data the statistic reads (for the ledger).
    statistic : str
        What is released, in words (for the ledger).
    source : str
        Paper, section and equation (for the ledger).
    backend : {"opendp", "numpy"}
        Noise source. ``"numpy"`` is for tests and simulations only: its event records an
        ``unverified_assumption`` (a secret generator state, no floating-point attack), so a
        ledger holding it is not a guarantee.
    rng : numpy.random.Generator, optional
        Generator for the NumPy backend. Ignored (and must be None) for OpenDP.
    clamping : str
        Which records were clamped into their declared bounds before ``values`` was computed
        (for the ledger, ``PrivacyEvent.clamping``); "" when none were.

    Returns
    -------
    ndarray of float64, same shape as ``values``
        The noisy statistic. (epsilon, 0)-DP under ``neighbouring``.

    Raises
    ------
    InvalidPrivateDataError
        If ``values`` contains NaN or infinities (OpenDP would silently treat NaN as 0).
    BudgetExceededError
        If the release would exceed the ledger's budget.
    ValueError
        If epsilon, sensitivity, neighbouring or backend is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_laplace
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> counts = np.array([12.0, 30.0])  # h(X): one count per outcome, sensitivity 1
    >>> noisy = release_laplace(counts, sensitivity=1.0, epsilon=0.5, ledger=ledger,
    ...                         neighbouring="replace-one", variables=("y",),
    ...                         statistic="counts of y")
    >>> noisy.shape, ledger.epsilon, ledger.events[0].noise_scale
    ((2,), 0.5, 2.0)

    A release over the budget raises before any noise is drawn:

    >>> release_laplace(counts, sensitivity=1.0, epsilon=0.75, ledger=ledger,
    ...                 neighbouring="replace-one", variables=("y",), statistic="counts of y")
    Traceback (most recent call last):
    ...
    pymc_dp.errors.BudgetExceededError: release of (epsilon=0.75, delta=0) would bring the total
    to (epsilon=1.25, delta=0), over the budget (epsilon=1, delta=0); nothing was released
    """
    array = check_release_inputs(values, variables, neighbouring, backend, rng)
    scale = laplace_scale(sensitivity, epsilon, backend)
    event = PrivacyEvent(
        mechanism="laplace",
        epsilon=float(epsilon),
        delta=0.0,
        sensitivity=float(sensitivity),
        neighbouring=neighbouring,
        variables=tuple(variables),
        noise_backend=backend,
        noise_scale=scale,
        statistic=statistic,
        source=source,
        unverified_assumption=_NUMPY_ASSUMPTION if backend == "numpy" else "",
        clamping=clamping,
    )
    ledger.charge(event)
    flat = array.ravel()
    if backend == "opendp":
        noisy = np.asarray(_opendp_measurement(scale)(flat.tolist()), dtype=np.float64)
    else:
        generator = rng if rng is not None else np.random.default_rng()
        noisy = flat + generator.laplace(0.0, scale, size=flat.shape)
    return noisy.reshape(array.shape)


_NUMPY_ASSUMPTION = seeded_noise_assumption("NumPy floating-point Laplace noise")


def check_release_inputs(values, variables, neighbouring, backend, rng) -> np.ndarray:
    """The checks every noise release makes before its budget check: finite values (OpenDP
    silently treats NaN as 0), a known neighbouring relation and backend, no ``rng`` for
    OpenDP. Returns ``values`` as float64.

    Raises
    ------
    InvalidPrivateDataError
        If ``values`` contains NaN or infinities (names the variables, never a value).
    ValueError
        For an unknown neighbouring relation or backend, an ``rng`` with OpenDP, or an
        ``rng`` that is not a ``numpy.random.Generator``.
    """
    raw = np.asarray(values)
    if raw.dtype.kind not in "biuf":  # NumPy's own conversion error would quote a value
        raise InvalidPrivateDataError(
            f"statistic of {', '.join(variables)} must be numbers, got an array of dtype "
            f"{raw.dtype.kind!r}; nothing was released"
        )
    array = raw.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise InvalidPrivateDataError(
            f"statistic of {', '.join(variables)} contains NaN or infinite values; "
            "nothing was released"
        )
    validate_neighbouring(neighbouring)
    _check_backend(backend)
    if backend == "opendp" and rng is not None:
        raise ValueError("rng is only used by the numpy backend; OpenDP draws its own noise")
    check_rng(rng)
    return array


def check_rng(rng) -> None:
    """Refuse an ``rng`` that is not a ``numpy.random.Generator`` (or None), before any charge.

    Raises
    ------
    ValueError
        Naming its type.
    """
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}; "
            "nothing was released"
        )


def _check_backend(backend: str) -> None:
    if backend not in NOISE_BACKENDS:
        raise ValueError(f"backend must be one of {NOISE_BACKENDS}, got {backend!r}")
