"""What a private trace was certified to hold: a digest of each of its groups' contents.

:func:`pymc_dp.sample` strips a trace down to what its route released (``posterior``,
``sample_stats``, ``released_statistics``, ``privacy_ledger``: :mod:`pymc_dp.traces`),
attaches the ledger and *certifies* the trace: root attribute
:data:`CERTIFICATE_ATTR` holds, as JSON, a SHA-256 digest of every variable (data and
coordinate: dims, dtype, shape, values, attributes) and of the attributes of every group and
of the root. The certificate says: this is what the ledger covers.

Anything added or changed afterwards is *uncertified* (:func:`uncertified`): the group
``observed_data`` that ``pm.sample_posterior_predictive(idata, extend_inferencedata=True)``
copies the raw records into, a ``log_likelihood`` from ``pm.compute_log_likelihood``, a
variable computed by hand, an edited value or attribute. Deleting certified content is not:
what is left was released. :func:`pymc_dp.to_netcdf` refuses to write a trace with uncertified
content and :meth:`PrivacyLedger.from_datatree <pymc_dp.PrivacyLedger.from_datatree>` warns
that its ledger no longer covers the trace.

Post-processing inside ``pymc_dp`` that reads only a trace's released content
(:func:`pymc_dp.sample_posterior_predictive`, :func:`pymc_dp.hmm.relabel.relabel_states`) certifies
its result when its input was fully certified (:func:`still_certified`), and leaves it
uncertified otherwise.

Only :func:`pymc_dp.sample` certifies. :meth:`PrivacyLedger.attach
<pymc_dp.PrivacyLedger.attach>` and :func:`pymc_dp.private_trace` (a trace assembled by hand)
do not: they cannot tell a posterior of released statistics from one of the raw records, so
:func:`pymc_dp.to_netcdf` refuses what they produce, and attaching a ledger to a certified
trace leaves it uncovered.

What this is not: a signature. The certificate guards against accidents — a PyMC function
that copies records into a trace, a helper that adds a column — not against a data holder who
edits it on purpose: whoever holds the records can write anything. Digests of released
values are computed from the trace itself, never from the records, so the certificate
reveals nothing the trace does not.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "CERTIFICATE_ATTR",
    "certify",
    "certify_stripped",
    "is_certified",
    "still_certified",
    "uncertified",
    "uncertified_items",
]

CERTIFICATE_ATTR = "pymc_dp_certificate"
"""Name of the root attribute that holds a trace's certificate (JSON)."""
_VERSION = 1


def _plain(value: Any) -> Any:
    """An attribute value as plain Python, the same before and after a netCDF round trip
    (lists come back as arrays, a one-element list as its element, ints as NumPy integers,
    a list of ints and floats as floats): every number as a float."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):  # [1, 2.5] comes back as [1.0, 2.5]
        return float(value)
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        return items[0] if len(items) == 1 else items
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _attrs_text(attrs: dict) -> str:
    return json.dumps(
        {str(k): _plain(v) for k, v in attrs.items() if k != CERTIFICATE_ATTR},
        sort_keys=True,
        default=str,
    )


def _values_bytes(values: np.ndarray) -> bytes:
    """The values as bytes, independent of how netCDF stores them: text as UTF-8 joined by a
    unit separator (object, fixed-width and byte strings alike), numbers as their native bytes
    in a fixed byte order."""
    if values.dtype.kind in "OUS":
        text = (
            v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for v in values.ravel().tolist()
        )
        return "\x1f".join(text).encode()
    if values.dtype.kind in "mM":  # netCDF reads times back in nanoseconds where it can
        values = _nanoseconds(values)
    array = np.ascontiguousarray(values)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.dtype.str.encode() + b"|" + array.tobytes()


def _nanoseconds(values: np.ndarray) -> np.ndarray:
    """Times in nanoseconds when that holds them exactly (what a netCDF round trip gives),
    else in their own unit (times beyond 1678–2262 have no nanosecond form)."""
    kind = "datetime64" if values.dtype.kind == "M" else "timedelta64"
    try:
        with np.errstate(over="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            converted = values.astype(f"{kind}[ns]")
    except (OverflowError, FloatingPointError, RuntimeWarning, ValueError):
        return values
    back = converted.astype(values.dtype)
    same = (back == values) | (np.isnat(back) & np.isnat(values))
    return converted if bool(np.all(same)) else values


def _digest(variable: xr.Variable) -> str:
    hasher = hashlib.sha256()
    hasher.update(repr((tuple(variable.dims), tuple(variable.shape))).encode())
    hasher.update(_values_bytes(np.asarray(variable.values)))
    hasher.update(_attrs_text(variable.attrs).encode())
    return hasher.hexdigest()


def _contents(idata: xr.DataTree) -> dict[str, str]:
    """``{item: digest}`` for every group's attributes and every variable of every group
    (data and coordinate variables, not inherited ones), and the root's attributes without
    the certificate. Items are ``"<group path>"`` for a group's attributes and
    ``"<group path>/<variable>"`` for a variable."""
    contents: dict[str, str] = {}
    for node in idata.subtree:
        path = node.path
        contents[path] = hashlib.sha256(_attrs_text(dict(node.attrs)).encode()).hexdigest()
        dataset = node.to_dataset(inherit=False)
        for name, variable in dataset.variables.items():
            contents[f"{path.rstrip('/')}/{name}"] = _digest(variable)
    return contents


def certify_stripped(idata: xr.DataTree, groups: tuple[str, ...]) -> xr.DataTree:
    """:func:`certify` a trace that holds only ``groups`` at its top level and no nested
    group; raise ``RuntimeError`` (a route's bug: nothing certified) otherwise. Called by
    :func:`pymc_dp.sample` alone, on the trace its route has stripped."""
    extra = sorted(set(idata.children) - set(groups))
    nested = sorted(node.path for node in idata.subtree if node.depth > 1)
    if extra or nested:
        raise RuntimeError(f"not certified: the trace holds groups {extra + nested}")
    return certify(idata)


def certify(idata: xr.DataTree) -> xr.DataTree:
    """Certify ``idata``'s current content (root attribute :data:`CERTIFICATE_ATTR`), in place.

    Called by :func:`pymc_dp.sample` (through :func:`certify_stripped`) and by
    post-processing of a fully certified trace. Not for users: certifying a trace asserts
    that everything in it was released (attaching a ledger does not certify).
    """
    certificate = {"version": _VERSION, "contents": _contents(idata)}
    idata.attrs[CERTIFICATE_ATTR] = json.dumps(certificate, sort_keys=True)
    return idata


def is_certified(idata: xr.DataTree) -> bool:
    """Whether ``idata`` carries a certificate (whatever was added since)."""
    return CERTIFICATE_ATTR in idata.attrs


def uncertified(idata: xr.DataTree) -> list[str]:
    """What ``idata`` holds that its certificate does not cover, one description per item.

    One item per group: a group added after certification as a whole (``"group
    'observed_data' (added after the trace was certified)"``), a certified group with the
    variables added to or changed in it and whether its attributes changed (``"group
    'posterior' (variable 'odds' added)"``; the root is "the root"). Removed content is not
    listed. A trace with no certificate gives one item saying so.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pymc_dp.certificate import certify, uncertified
    >>> trace = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": ("draw", np.zeros(3))})})
    >>> _ = certify(trace)
    >>> uncertified(trace)
    []
    >>> trace["observed_data"] = xr.Dataset({"y": ("obs", np.array([1.0, 0.0]))})
    >>> uncertified(trace)
    ["group 'observed_data' (added after the trace was certified)"]
    >>> trace["posterior"]["odds"] = trace["posterior"]["mu"] + 1.0
    >>> uncertified(trace)[0]
    "group 'posterior' (variable 'odds' added)"
    """
    if not is_certified(idata):
        return ["the whole trace (it carries no certificate: not a trace from pymc_dp.sample)"]
    try:
        certificate = json.loads(str(idata.attrs[CERTIFICATE_ATTR]))
        certified = dict(certificate["contents"])
    except (ValueError, KeyError, TypeError):
        return ["the whole trace (its certificate is unreadable)"]
    changes, added = _uncovered(idata, certified)
    return [f"{_group_name(group)} ({', '.join(listed)})" for group, listed in changes.items()] + [
        f"{_group_name(group)} (added after the trace was certified)" for group in added
    ]


def uncertified_items(idata: xr.DataTree) -> set[str] | None:
    """Paths (``"/posterior/odds"``, ``"/observed_data"``) of what ``idata`` holds that its
    certificate does not cover: variables added or changed, groups whose attributes changed
    or that were added. None when the trace has no readable certificate."""
    try:
        certified = dict(json.loads(str(idata.attrs[CERTIFICATE_ATTR]))["contents"])
    except (KeyError, ValueError, TypeError):
        return None
    return {item for item, digest in _contents(idata).items() if certified.get(item) != digest}


def _uncovered(idata: xr.DataTree, certified: dict) -> tuple[dict[str, list[str]], list[str]]:
    """(certified group → what changed in it, groups added as a whole)."""
    groups = _group_paths(idata)
    added: list[str] = []  # groups added as a whole (their content is not listed)
    changes: dict[str, list[str]] = {}  # certified group path -> what changed in it
    for item, digest in _contents(idata).items():  # parents before children
        if certified.get(item) == digest:
            continue
        group, _, name = (item, "", "") if item in groups else item.rpartition("/")
        group = group or "/"
        if any(group == g or group.startswith(g + "/") for g in added):
            continue
        if not name and item not in certified:
            added.append(item)
            continue
        change = f"variable '{name}' " if name else "attributes "
        changes.setdefault(group, []).append(
            change + ("added" if item not in certified else "changed")
        )
    return changes, added


def still_certified(idata: xr.DataTree) -> bool:
    """Whether ``idata`` is certified and holds nothing its certificate does not cover."""
    return is_certified(idata) and not uncertified(idata)


def _group_paths(idata: xr.DataTree) -> set[str]:
    return {node.path for node in idata.subtree}


def _group_name(path: str) -> str:
    return "the root" if path in ("", "/") else f"group '{path.strip('/')}'"
