"""Write a private trace to a file only if everything in it was released: the publish gate.

:func:`pymc_dp.to_netcdf` is the way to save a trace from :func:`pymc_dp.sample` for others to read.
It refuses — :class:`~pymc_dp.errors.UncertifiedTraceError`, nothing written — a trace with no
privacy ledger, and a trace holding any group, variable or attribute its ledger does not
cover (:mod:`pymc_dp.certificate`): above all ``observed_data``, which
``pm.sample_posterior_predictive(idata, extend_inferencedata=True)`` fills with the raw
records.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import xarray as xr

from pymc_dp.certificate import certify, uncertified
from pymc_dp.errors import UncertifiedTraceError
from pymc_dp.ledger import LEDGER_ATTR, LEDGER_GROUP

__all__ = ["to_netcdf"]

_REMEDIES = {
    "observed_data": "the raw records, copied by pm.sample_posterior_predictive("
    "extend_inferencedata=True) or pm.sample_prior_predictive on the raw model",
    "constant_data": "the model's pm.Data arrays, possibly private",
    "log_likelihood": "per-record log-likelihoods of the raw records (pm.compute_log_likelihood)",
    "posterior_predictive": "replicates of the records from pm.sample_posterior_predictive: use "
    "pymc_dp.sample_posterior_predictive",
    "prior_predictive": "draws from pm.sample_prior_predictive on the raw model",
}


def to_netcdf(idata: xr.DataTree, path: str | os.PathLike, **kwargs) -> Path:
    """Write a private trace to netCDF (``h5netcdf``) if its ledger covers all of it.

    Parameters
    ----------
    idata : xarray.DataTree
        A trace returned by :func:`pymc_dp.sample` (certified when its ledger was attached),
        possibly with groups added by ``pymc_dp``'s own post-processing
        (:func:`pymc_dp.sample_posterior_predictive`, :func:`pymc_dp.hmm.relabel.relabel_states`) or
        with groups deleted.
    path : str or os.PathLike
        The file to write. It is written whole or not at all: the trace goes to a temporary
        file in the same folder, renamed to ``path`` when complete (an existing file is
        replaced only then).
    **kwargs
        ``engine`` (default ``"h5netcdf"``) and ``format``, passed to
        :meth:`xarray.DataTree.to_netcdf`; any other option (``encoding``, ``group``, …) is
        refused. Variables are written with xarray's default encodings, and the file's
        certificate covers exactly what it holds.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    UncertifiedTraceError
        If ``idata`` carries no privacy ledger, no certificate, or content its certificate does
        not cover (each item is named, with what it likely holds). Nothing is written.
    ValueError
        For an option other than ``engine`` and ``format``. Nothing is written.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import xarray as xr
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    ...     idata = pymc_dp.sample(20, tune=20, chains=1, epsilon=1.0, progressbar=False)
    >>> path = pymc_dp.to_netcdf(idata, "private_trace.nc")
    >>> with xr.open_datatree(path, engine="h5netcdf") as loaded:
    ...     print(pymc_dp.PrivacyLedger.from_datatree(loaded).epsilon)
    1.0
    >>> path.unlink()
    """
    target = Path(path)
    problems = _problems(idata)
    if problems:
        raise UncertifiedTraceError(
            f"not written: {target} would publish what no privacy ledger covers: "
            + "; ".join(problems)
            + ". Nothing was written."
        )
    refused = sorted(set(kwargs) - _OPTIONS)
    if refused:
        raise ValueError(
            f"to_netcdf options {refused} are not accepted (encodings and groups are written "
            f"as pymc_dp.sample made them); accepted: {sorted(_OPTIONS)}. Nothing was written."
        )
    kwargs.setdefault("engine", "h5netcdf")
    published = _published(idata)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".part", dir=target.parent
    )
    os.close(handle)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as a plain write would (mkstemp makes it 0600)
        published.to_netcdf(temporary, **kwargs)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return target


_OPTIONS = frozenset({"engine", "format"})
"""Options of :meth:`xarray.DataTree.to_netcdf` that :func:`to_netcdf` passes on."""


def _published(idata: xr.DataTree) -> xr.DataTree:
    """What is written: a copy of the trace with no encoding on any variable (xarray's
    defaults: an encoding becomes attributes in the file, outside what the certificate
    covers) and a certificate of exactly what it holds (digests of deleted content, and
    anything else in the certificate attribute, are not written)."""
    datasets = {}
    for node in idata.subtree:
        dataset = node.to_dataset(inherit=False).copy(deep=False)  # new variables, same data
        for variable in dataset.variables.values():
            variable.encoding = {}
        datasets[node.path] = dataset
    published = xr.DataTree.from_dict(datasets)
    return certify(published)


def _problems(idata: xr.DataTree) -> list[str]:
    if not isinstance(idata, xr.DataTree):
        return [f"idata is a {type(idata).__name__}, not the xarray.DataTree of pymc_dp.sample"]
    if LEDGER_ATTR not in idata.attrs and LEDGER_GROUP not in idata.children:
        return ["the trace carries no privacy ledger (not a trace from pymc_dp.sample)"]
    problems = uncertified(idata)
    for i, problem in enumerate(problems):
        for group, holds in _REMEDIES.items():
            if problem.startswith(f"group '{group}'"):
                problems[i] = f"{problem}: {holds}; delete it with del idata['{group}']"
    return problems
