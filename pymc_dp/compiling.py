"""Compiling once, and saying so when a first call compiles (numba kernels, PyTensor functions).

A first run can spend from seconds to minutes compiling before it prints anything: numba
compiles the HMM's and the latent counts' kernels once per machine (then loads them from its
on-disk cache in ``__pycache__``), PyTensor compiles a private model's functions once per
process. :func:`announce` logs one INFO line on the ``pymc_dp`` logger before such a step
when it is known to compile; nothing when it is cached. The messages name the step only: no
data, released or private, is ever in them.

The ``pymc_dp`` logger prints INFO records to standard error the way PyMC's ``pymc`` logger
does (a stream handler when the root logger has none), so these lines appear beside PyMC's
"Auto-assigning NUTS sampler…" and the user's own logging configuration wins when it exists.
"""

from __future__ import annotations

import logging
import os

__all__ = ["announce", "numba_needs_compiling"]

_log = logging.getLogger("pymc_dp")
if not logging.root.handlers:
    _log.setLevel(logging.INFO)
    if not _log.handlers:
        _log.addHandler(logging.StreamHandler())


def numba_needs_compiling(*dispatchers) -> bool:
    """True if a numba ``@njit`` dispatcher has no compiled signature in this process and no
    index file in numba's on-disk cache (so its first call compiles rather than loads)."""
    for dispatcher in dispatchers:
        if dispatcher.signatures:
            continue
        cache = getattr(dispatcher, "_cache", None)
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        if index is None or not os.path.exists(index):
            return True
    return False


def announce(what: str, compiling: bool) -> None:
    """Log "Compiling {what} …" at INFO on the ``pymc_dp`` logger, if ``compiling``.

    Parameters
    ----------
    what : str
        What compiles, in words (for example "the naive-Bayes HMM's numba kernels"); never
        data.
    compiling : bool
        Whether the next step compiles (for example :func:`numba_needs_compiling`); when False
        nothing is logged.
    """
    if compiling:
        _log.info("Compiling %s: first run only, this can take a few minutes …", what)
