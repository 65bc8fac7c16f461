"""Private records larger than memory: Dask DataFrames and arrays in a PyMC model.

On the Laplace route the posterior depends on the records only through the released
statistics (Foulds et al. 2016, §3.2), so the records need never enter the model: their
statistics are computed where the records are, in one pass, validated on the way, and
released once. Sampling then costs the same for 10³ or 10¹⁰ records.

:func:`Data` is ``pm.Data`` for records that live in a Dask collection (a DataFrame read
from Parquet, a Dask array). Inside the model it is an empty container of the right
dimensions, so the model is written exactly as for in-memory records::

    records = dd.read_parquet("stops/")                   # one row per record
    with pm.Model(coords={"race": races}) as model:
        race = pymc_dp.Data("race_records", records, column="race", categories=races)
        rate = pm.Beta("rate", 1, 1, dims="race")
        searched = pymc_dp.Data("searched_records", records, column="searched")
        pm.Bernoulli("searched", p=rate[race], observed=searched)
        idata = pymc_dp.sample(1000, epsilon=1.0)

The recogniser (:mod:`pymc_dp.analysis`) finds the likelihoods as for in-memory arrays; the links it
finds hold :class:`DaskRecords` handles instead of arrays. :func:`~pymc_dp.records.summarise` then
makes **one pass** over each Dask collection (every likelihood reading the same DataFrame is
summarised from the same read of each partition): in each partition it binds the columns to an
in-memory copy of the link and runs that family's own validation and statistics, so the statistics
are exactly those of the in-memory path (a sum over partitions of sums over records). Only the
per-partition sums, record counts and error messages (counts, never values) leave the workers; they
are added up in the client and kept in the link's :class:`~pymc_dp.families.base.RecordSummary`. The
release, the ledger and the sampler are those of the in-memory path.

What Dask sees: the raw records (it reads them, on this machine or on a cluster's workers).
What leaves Dask: per-partition sums of the statistics and record counts (the exact, private
statistics, in memory in the client until the mechanism adds noise), and per-partition error
messages that give counts only. Errors that arise while reading (a pyarrow cast, a missing
file) are reported by type only, since their messages may quote a record.

The same code runs on a Dask distributed cluster: with a ``distributed.Client`` active, the
pass runs on its workers (which must have pymc_dp installed) and only the per-partition
summaries travel back.

Supported on the Laplace statistics route (``mechanism="laplace"``, every family with its
``data_bounds``) and the Dirichlet posterior releases (``mechanism="dirichlet-..."``). The
posterior-sampling mechanisms read records at every step and refuse Dask-backed records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

import numpy as np
import pandas as pd
import pymc as pm

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError, value_free_repr
from pymc_dp.families.base import ConjugateLink, RecordSummary
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.graph.reading import RECORDS_TAG, dask_records

__all__ = ["DaskRecords", "Data", "dask_records", "records_of", "summarise"]

_FIELDS = ("data", "groups", "covariates")
_ROLES = {"data": "observed values", "groups": "group labels", "covariates": "covariates"}


@dataclasses.dataclass(frozen=True, eq=False)
class DaskRecords:
    """Handle on private records in a Dask collection: what a :func:`Data` container holds.

    The recogniser reads it where it would read an in-memory array (``ndim``, ``shape``,
    ``reshape(-1)``); only :func:`~pymc_dp.records.summarise` reads the records.

    Attributes
    ----------
    name : str
        Name of the model's ``pm.Data`` container.
    collection : dask.dataframe.DataFrame or dask.array.Array
        Where the records are (a Series is kept as a one-column DataFrame).
    columns : tuple of str or None
        The DataFrame columns read (None for an array).
    ndim : int
        1 (one value per record) or 2 (a row per record: covariates, Multinomial counts).
    categories : tuple or None
        Declared labels of a categorical column, coded 0..K − 1 in this order (public);
        records outside them are invalid.
    """

    name: str
    collection: object
    columns: tuple[str, ...] | None
    ndim: int
    categories: tuple | None = None
    is_dask_records: ClassVar[bool] = True

    @property
    def width(self) -> int:
        """Values per record (1, or the number of columns of a 2-D source)."""
        if self.ndim == 1:
            return 1
        if self.columns is not None:
            return len(self.columns)
        return int(self.collection.shape[1])

    @property
    def shape(self) -> tuple:
        """(n,) or (n, width), with n = None: the number of records is not read here."""
        return (None,) if self.ndim == 1 else (None, self.width)

    def reshape(self, *shape):
        """``reshape(-1)`` of one value per record is the handle itself; nothing else."""
        if self.ndim == 1 and shape in ((-1,), ((-1,),)):
            return self
        raise NonPrivateModelError(
            f"{self.name}: Dask-backed records of shape {self.shape} cannot be reshaped to "
            f"{shape}; give the records one value per record (or one row per record)."
        )

    def __repr__(self) -> str:
        return f"DaskRecords({self.name!r}, columns={self.columns}, ndim={self.ndim})"


def _dask():
    try:
        import dask
        import dask.array
        import dask.dataframe
    except ImportError as error:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            'Dask-backed records need the dask extra: pip install "pymc_dp[dask]"'
        ) from error
    return dask


def Data(  # named after pm.Data, which it stands in for
    name: str,
    records,
    *,
    column: str | None = None,
    columns: Sequence[str] | None = None,
    categories: Sequence | None = None,
    model: pm.Model | None = None,
):
    """A ``pm.Data`` container whose private records live in a Dask collection.

    Use it wherever an in-memory model reads records with ``pm.Data``: observed values
    (``observed=pymc_dp.Data("y", frame)``), group labels (``p[pymc_dp.Data("g", frame)]``) and a
    regression's covariates (``pymc_dp.Data("X", frame, columns=[...]) @ beta``). The records are
    private (they cannot be declared ``public``); nothing in the model reads them: the container is
    empty, and :func:`~pymc_dp.records.summarise` computes the statistics in one pass over the
    collection when ``pymc_dp.sample`` validates.

    Parameters
    ----------
    name : str
        Name of the container in the model (``data_bounds`` keys use it, as for ``pm.Data``).
    records : dask.dataframe.DataFrame, dask.dataframe.Series or dask.array.Array
        Where the records are. Every container one likelihood reads must come from the same
        DataFrame object (one row per record), or be Dask arrays with the same length.
    column : str, optional
        The DataFrame column to read (default: ``name``).
    columns : sequence of str, optional
        Several DataFrame columns, one row per record (a regression's covariates).
    categories : sequence, optional
        Declared labels of a categorical or string column (group labels, Categorical
        outcomes): the record with label ``categories[k]`` is coded k. A label outside them
        (or a missing one) is an invalid record.
    model : pm.Model, optional
        The model (default: the one in context).

    Returns
    -------
    TensorSharedVariable
        The (empty) container, as ``pm.Data`` returns it.

    Raises
    ------
    TypeError
        If ``records`` is not a Dask collection, or a column is not numeric and has no
        ``categories``.
    ValueError
        For an unknown column, both ``column`` and ``columns``, or duplicate categories.

    Examples
    --------
    Records in a Dask DataFrame (here built from pandas; ``dd.read_parquet`` in practice):

    >>> import dask.dataframe as dd
    >>> import numpy as np
    >>> import pandas as pd
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=1_000)
    >>> records = dd.from_pandas(pd.DataFrame({"y": outcome}), npartitions=2)
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=pymc_dp.Data("y_records", records, column="y"))
    ...     idata = pymc_dp.sample(100, tune=100, chains=1, epsilon=1.0, progressbar=False)
    >>> idata.posterior["p"].shape, pymc_dp.PrivacyLedger.from_datatree(idata).epsilon
    ((1, 100), 1.0)
    """
    _dask()
    import dask.array as da
    import dask.dataframe as dd

    if column is not None and columns is not None:
        raise ValueError(f"{name}: give column or columns, not both")
    if isinstance(records, dd.Series):
        if column is not None or columns is not None:
            raise ValueError(f"{name}: a Dask Series is one column; give no column or columns")
        label = records.name if records.name is not None else name
        collection, selected = records.to_frame(name=label), (label,)
    elif isinstance(records, dd.DataFrame):
        selected = tuple(columns) if columns is not None else (name if column is None else column,)
        missing = [c for c in selected if c not in records.columns]
        if missing:
            raise ValueError(
                f"{name}: the Dask DataFrame has no column(s) {missing} (it has "
                f"{list(records.columns)})"
            )
        collection = records
    elif isinstance(records, da.Array):
        if column is not None or columns is not None:
            raise ValueError(f"{name}: a Dask array has no columns; give no column or columns")
        if records.ndim not in (1, 2):
            raise ValueError(f"{name}: a Dask array of records must be 1-D or 2-D")
        if records.ndim == 2 and not np.isfinite(records.shape[1]):
            raise ValueError(f"{name}: a 2-D Dask array of records needs a known number of columns")
        if isinstance(getattr(records, "_meta", None), np.ma.MaskedArray):
            raise TypeError(
                f"{name}: a masked Dask array hides records (pymc_dp never imputes or drops "
                "private records); give the records complete, or drop them before the analysis "
                "under neighbouring='add-remove-one'"
            )
        collection, selected = records, None
    else:
        raise TypeError(
            f"{name}: pymc_dp.Data takes a Dask DataFrame, Series or array, got "
            f"{type(records).__name__}; use pm.Data for in-memory records"
        )
    ndim = records.ndim if selected is None else (2 if columns is not None else 1)
    if categories is not None:
        categories = tuple(categories)
        if ndim != 1 or len(set(categories)) != len(categories) or not categories:
            raise ValueError(f"{name}: categories must be distinct labels of a one-column source")
    dtypes = [records.dtype] if selected is None else [collection[c].dtype for c in selected]
    if categories is None:
        for dtype, label in zip(dtypes, selected or (None,), strict=True):
            if not _numeric(dtype):
                where = "its array" if label is None else f"column {label!r}"
                raise TypeError(
                    f"{name}: {where} holds {dtype} values; give categories=[...] "
                    "(the declared labels, coded 0..K-1) or numeric records"
                )
    handle = DaskRecords(name, collection, selected, ndim, categories)
    placeholder_dtype = np.int64 if categories is not None else _placeholder_dtype(dtypes)
    shape = (0,) if ndim == 1 else (0, handle.width)
    container = pm.Data(name, np.zeros(shape, dtype=placeholder_dtype), model=model)
    setattr(container.tag, RECORDS_TAG, handle)
    return container


def _numeric(dtype) -> bool:
    """Numbers (NumPy's or pandas' nullable ones), booleans; not strings or categoricals."""
    return getattr(dtype, "kind", "O") in "biuf"


def _placeholder_dtype(dtypes) -> np.dtype:
    kinds = {getattr(d, "kind", "f") for d in dtypes}
    return np.dtype(np.int64) if kinds <= set("biu") else np.dtype(np.float64)


def records_of(model: pm.Model) -> dict[str, DaskRecords]:
    """Every Dask-backed container of ``model``, by name."""
    found = {}
    for var in model.data_vars:
        handle = dask_records(var)
        if handle is not None:
            found[var.name] = handle
    return found


def refuse_dask_records(model: pm.Model, mechanism: str) -> None:
    """Raise for a model with Dask-backed records on a route that reads records one by one.

    Raises
    ------
    NonPrivateModelError
        Naming the containers and the routes that take them.
    """
    names = sorted(records_of(model))
    if names:
        raise NonPrivateModelError(
            f"mechanism={mechanism!r} reads the records at every step of its sampler; "
            f"{names} live in a Dask collection, which only the released statistics "
            "(mechanism='laplace') and the Dirichlet posterior releases read, in one pass. "
            "Nothing was released."
        )


def refuse_public(model: pm.Model, public: Iterable[str]) -> None:
    """Raise ``ValueError`` when a Dask-backed container is declared public.

    Its records never enter the model, so no variable could read them as public data.
    """
    named = sorted(set(public) & set(records_of(model)))
    if named:
        raise ValueError(
            f"{named} hold Dask-backed records, which are private: they are read only by the "
            "mechanism that releases their statistics. Declare public arrays with pm.Data."
        )


# --- the pass -------------------------------------------------------------------------------


Link = ConjugateLink | BoundedLink


@dataclasses.dataclass(frozen=True)
class _Column:
    """How to read one field of a link from a partition (picklable, no collection)."""

    columns: tuple[str, ...] | None
    ndim: int
    categories: tuple | None
    position: int = 0  # the block's position among an array link's blocks


@value_free_repr
@dataclasses.dataclass(frozen=True)
class _Binding:
    """One link to summarise: its template (records removed) and where each field is."""

    name: str
    template: Link
    fields: tuple[tuple[str, _Column], ...]

    def bind(self, part) -> Link:
        values = {field: _values(part, column) for field, column in self.fields}
        return dataclasses.replace(self.template, **values)


def _values(part, column: _Column) -> np.ndarray:
    if isinstance(part, pd.DataFrame):
        if column.ndim == 1:
            return _series_values(part[column.columns[0]], column.categories)
        return np.column_stack([_series_values(part[c], None) for c in column.columns]).reshape(
            len(part), len(column.columns)
        )
    block = part[column.position] if isinstance(part, tuple) else part
    if isinstance(block, np.ma.MaskedArray):
        raise InvalidPrivateDataError(
            f"{int(np.ma.count_masked(block))} records are masked; pymc_dp never imputes or "
            "drops private records"
        )
    array = np.asarray(block)
    if column.categories is not None:
        return _series_values(pd.Series(array), column.categories)
    return array


def _series_values(series: pd.Series, categories: tuple | None) -> np.ndarray:
    """A column as NumPy: categories coded 0..K − 1 (−1 outside them, or missing); a
    nullable numeric column with its missing values as NaN (validation counts them)."""
    if categories is not None:
        return pd.Index(list(categories)).get_indexer(series).astype(np.int64)
    if isinstance(series.dtype, pd.api.extensions.ExtensionDtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if series.dtype.kind == "b":
        return series.to_numpy().astype(np.int64)
    return series.to_numpy()


@value_free_repr
@dataclasses.dataclass(frozen=True)
class _Part:
    """One partition's summary of one link: the statistics, or an error (counts only)."""

    statistics: np.ndarray | None
    n_records: int
    error: str | None


def _summarise_part(part, bindings: tuple[_Binding, ...]) -> dict[str, _Part]:
    """Validate and summarise every link of ``bindings`` on one partition (on a worker)."""
    out = {}
    for binding in bindings:
        try:
            link = binding.bind(part)
            n = int(np.shape(link.data)[0]) if np.ndim(link.data) else 1
            out[binding.name] = _Part(link.statistics(), n, None)
        except InvalidPrivateDataError as error:
            out[binding.name] = _Part(None, 0, str(error))
        except Exception as error:  # any error: its message may quote a record
            out[binding.name] = _Part(
                None,
                0,
                f"{binding.name}: {type(error).__name__} while reading its records (message "
                "withheld: it may quote a record)",
            )
    return out


def _sources(link: Link) -> dict[str, object]:
    return {f: getattr(link, f, None) for f in _FIELDS if getattr(link, f, None) is not None}


def _is_dask(link: Link) -> bool:
    return any(getattr(v, "is_dask_records", False) for v in _sources(link).values())


def _template(link: Link) -> Link:
    """The link without its records (and, for a bounded link, without its PyMC graphs:
    they stay in the client, only the family and the declared bounds travel)."""
    empty = dict.fromkeys(_sources(link))
    if isinstance(link, BoundedLink):
        structure = dataclasses.replace(link.structure, parameters={})
        return dataclasses.replace(link, structure=structure, **empty)
    return dataclasses.replace(link, **empty)


def _refuse_unpaired_trials(name: str, link: Link) -> None:
    """Per-record trials in memory cannot be paired with records read partition by partition
    (each partition would be bound to every trial: a wrong table and a wrong sensitivity)."""
    if isinstance(link, ConjugateLink) and not link.domain.trials_public:
        raise NonPrivateModelError(
            f"{name}: its per-record trials are in memory and its records in a Dask "
            "collection; one likelihood's records must all be in the same place. Per-record "
            "trials in Dask are not supported either: give the trials as one public number, or "
            "the records in memory. Nothing was released."
        )


def _refuse_misplaced_categories(name: str, link: Link, sources: Mapping) -> None:
    """``categories=`` codes labels: group labels, or Categorical and Bernoulli outcomes; on
    counts, values or covariates it would silently replace each record by its code."""
    for field, handle in sources.items():
        if getattr(handle, "categories", None) is None or field == "groups":
            continue
        if (
            field == "data"
            and getattr(link.family, "likelihood", "")
            in (
                "categorical",
                "bernoulli",
            )
            and isinstance(link, ConjugateLink)
        ):
            continue
        raise NonPrivateModelError(
            f"{name}: categories= was given for {handle.name!r}, its {_ROLES[field]}; "
            "categories code group labels and Categorical or Bernoulli outcomes only, and "
            "would replace these records by their codes. Nothing was released."
        )


def _plan(links: Mapping[str, Link]):
    """Delayed tasks, one per partition of each collection, and how to read their results.

    Raises
    ------
    NonPrivateModelError
        When one likelihood mixes Dask-backed and in-memory records, or records of
        different DataFrames, or arrays of different lengths.
    """
    _dask()
    import dask

    frames: dict[int, tuple[object, list[_Binding], set[str]]] = {}
    arrays: list[tuple[list, _Binding]] = []
    for name, link in links.items():
        sources = _sources(link)
        _refuse_unpaired_trials(name, link)
        _refuse_misplaced_categories(name, link, sources)
        handles = list(sources.values())
        in_memory = [f for f, v in sources.items() if not getattr(v, "is_dask_records", False)]
        if in_memory:
            raise NonPrivateModelError(
                f"{name}: its {', '.join(_ROLES[f] for f in in_memory)} are in memory and the "
                "rest of its records in a Dask collection; one likelihood's records must all "
                "be in the same place (one row per record). Nothing was released."
            )
        kinds = {h.columns is None for h in handles}
        if len(kinds) > 1:
            raise NonPrivateModelError(
                f"{name}: its records mix a Dask DataFrame and Dask arrays; give them as "
                "columns of one DataFrame. Nothing was released."
            )
        if handles[0].columns is not None:  # DataFrame columns
            collection = handles[0].collection
            if any(h.collection is not collection for h in handles):
                raise NonPrivateModelError(
                    f"{name}: its observed values, group labels and covariates must be "
                    "columns of the same Dask DataFrame (pymc_dp.Data(name, frame, "
                    "column=...)), so that each row is one record. Nothing was released."
                )
            fields = tuple(
                (f, _Column(h.columns, h.ndim, h.categories)) for f, h in sources.items()
            )
            _, bindings, columns = frames.setdefault(id(collection), (collection, [], set()))
            bindings.append(_Binding(name, _template(link), fields))
            for h in handles:
                columns.update(h.columns)
        else:
            first = handles[0].collection
            length = first.shape[0]
            if any(
                not np.isfinite(h.collection.shape[0]) or h.collection.shape[0] != length
                for h in handles
            ):
                raise NonPrivateModelError(
                    f"{name}: its Dask arrays must have the same, known length (one entry per "
                    "record). Nothing was released."
                )
            blocks = []
            for h in handles:
                array = h.collection
                chunks = {0: first.chunks[0]} | ({1: -1} if array.ndim == 2 else {})
                blocks.append(array.rechunk(chunks).to_delayed().ravel())
            fields = tuple(
                (f, _Column(None, h.ndim, h.categories, position=i))
                for i, (f, h) in enumerate(sources.items())
            )
            binding = _Binding(name, _template(link), fields)
            arrays.append((list(zip(*blocks, strict=True)), binding))
    tasks, readers = [], []
    summarise_part = dask.delayed(_summarise_part, pure=True)
    for collection, bindings, columns in frames.values():
        parts = collection[sorted(columns)].to_delayed()
        bound = tuple(bindings)
        tasks += [summarise_part(part, bound) for part in parts]
        readers += [bound] * len(parts)
    for blocks, binding in arrays:
        tasks += [summarise_part(tuple(block), (binding,)) for block in blocks]
        readers += [(binding,)] * len(blocks)
    return tasks, readers


def _compute(tasks: list, progressbar: bool) -> list:
    """Run the pass: on the active distributed client if there is one, else Dask's local
    scheduler; with a progress bar (tasks done, never a record) on request."""
    import dask

    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is not None:
        futures = client.compute(tasks)
        if progressbar:
            from distributed import progress

            progress(futures)
        return client.gather(futures)
    if progressbar:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            return list(dask.compute(*tasks))
    return list(dask.compute(*tasks))


def summarise(links: Mapping[str, Link], *, progressbar: bool = False) -> dict[str, Link]:
    """Validate every link; summarise the Dask-backed ones in one pass over their records.

    In-memory links are validated (:meth:`~pymc_dp.ConjugateLink.validate`,
    :meth:`~pymc_dp.families.bounded.BoundedLink.validate`) and returned as they are. Dask-backed
    links are read partition by partition: each partition is bound to an in-memory copy of the link,
    which its family validates and sums exactly as the in-memory path does; the sums are added up
    and the link is returned with its :class:`~pymc_dp.families.base.RecordSummary`. All links on
    one DataFrame share one read of each partition; every collection is read in one
    ``dask.compute``.

    Parameters
    ----------
    links : dict
        Observed name → link, as :func:`pymc_dp.analysis.conjugate.analyse_model` finds them.
    progressbar : bool
        Show the pass's progress (Dask's, or ``distributed.progress`` on a cluster).

    Returns
    -------
    dict
        The same names → links, Dask-backed ones with their summary.

    Raises
    ------
    InvalidPrivateDataError
        If any record is invalid (NaN, outside its domain or declared bounds, an unknown
        category or group label), naming the variable and, per partition, how many records
        (never a value); or if reading the records failed (the error's type only).
    NonPrivateModelError
        If one likelihood's records are not all in one DataFrame (or equally long arrays).
    """
    dask_links = {name: link for name, link in links.items() if _is_dask(link)}
    for name, link in links.items():
        if name not in dask_links:
            link.validate()
    if not dask_links:
        return dict(links)
    tasks, readers = _plan(dask_links)
    failure = None
    try:
        results = _compute(tasks, progressbar)
    except Exception as error:  # any error: its message may quote a record
        failure = f"{type(error).__name__}" + (
            f" ({error.filename})" if isinstance(error, OSError) and error.filename else ""
        )
    if failure is not None:
        raise InvalidPrivateDataError(
            f"{sorted(dask_links)}: reading the Dask records failed with {failure} (message "
            "withheld: it may quote a record). Nothing was released."
        )
    summarised, errors = _combine(links, dask_links, results, readers)
    del results  # the exact statistics must not stay in this frame's traceback
    if errors:
        del summarised
        raise InvalidPrivateDataError("; ".join(errors) + ". Nothing was released.")
    return summarised


def _combine(links, dask_links, results, readers) -> tuple[dict[str, Link], list[str]]:
    """Add up the partitions' summaries: the links with their summary, or the errors (how
    many partitions hold invalid records, and the first partition's message, never which
    partition: with one record per partition that would say which record)."""
    parts: dict[str, list[_Part]] = {name: [] for name in dask_links}
    for result, bindings in zip(results, readers, strict=True):
        for binding in bindings:
            parts[binding.name].append(result[binding.name])
    summarised = dict(links)
    errors = []
    for name, link_parts in parts.items():
        bad = [p.error for p in link_parts if p.error is not None]
        if bad:
            errors.append(
                f"{name}: invalid records in {len(bad)} of {len(link_parts)} partitions of its "
                f"Dask records (the first: {bad[0]})"
            )
            continue
        statistics = np.sum([p.statistics for p in link_parts], axis=0)
        summary = RecordSummary(
            statistics=np.asarray(statistics, dtype=np.float64),
            n_records=sum(p.n_records for p in link_parts),
            partitions=len(link_parts),
        )
        summarised[name] = dataclasses.replace(links[name], summary=summary)
    if errors:
        return {}, errors
    return summarised, errors
