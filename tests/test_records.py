"""Records larger than memory (pymc_dp.Data on Dask collections): the same statistics as the
in-memory path, one pass, validation without echoing values, refusals that charge nothing,
a Parquet round trip and a local distributed cluster."""

from __future__ import annotations

import threading

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import recognise
from pymc_dp.records import DaskRecords, summarise

LABELS = ["north", "south", "east"]
BOUNDS = {"z": (-1.0, 3.0), "y_count": (0, 8), "w": (-2.0, 2.0), "X": (0.0, 1.0)}
BOUNDS_Z = {"z": (-1.0, 3.0)}
FAST = {"tune": 100, "chains": 1, "progressbar": False, "compute_convergence_checks": False}


def records(n=3_000, seed=0) -> pd.DataFrame:
    """Records whose every sum is exact in float64 (dyadic values), so the Dask and
    in-memory statistics agree exactly, whatever the order of summation."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    x = rng.integers(0, 5, (n, 2)) / 4.0  # in [0, 1]
    return pd.DataFrame(
        {
            "g": g,
            "region": np.array(LABELS)[g],
            "y": rng.binomial(1, np.array([0.1, 0.3, 0.6])[g]),
            "trials4": rng.binomial(4, 0.5, n),
            "category": rng.integers(0, 3, n),
            "y_count": rng.integers(0, 7, n),
            "z": rng.integers(0, 17, n) / 4.0 - 1.0,
            "x0": x[:, 0],
            "x1": x[:, 1],
            "w": np.clip(0.5 * x[:, 0] - 0.25 * x[:, 1] + rng.integers(-2, 3, n) / 4.0, -2, 2),
        }
    )


def build(source, n_groups=3):
    """One model with every family, reading ``source``: a pandas DataFrame (in memory,
    pm.Data) or a Dask DataFrame (pymc_dp.Data). Same model text either way."""
    dask_backed = isinstance(source, dd.DataFrame)

    def data(name, column=None, columns=None, categories=None):
        if dask_backed:
            return pymc_dp.Data(name, source, column=column, columns=columns, categories=categories)
        if columns is not None:
            return pm.Data(name, source[columns].to_numpy())
        return pm.Data(name, source[column].to_numpy())

    with pm.Model(coords={"region": LABELS}) as model:
        group = (
            pymc_dp.Data("group", source, column="region", categories=LABELS)
            if dask_backed
            else pm.Data("group", source["g"].to_numpy())
        )
        rate = pm.Beta("rate", 1, 1, dims="region")
        pm.Bernoulli("y", p=rate[group], observed=data("y_records", "y"))
        p4 = pm.Beta("p4", 2, 2)
        pm.Binomial("trials4", n=4, p=p4, observed=data("trials4_records", "trials4"))
        probs = pm.Dirichlet("probs", a=np.ones(3))
        pm.Categorical("category", p=probs, observed=data("category_records", "category"))
        lam = pm.Gamma("lam", 2, 1, dims="region")
        pm.Poisson("y_count", mu=lam[group], observed=data("count_records", "y_count"))
        mu, sigma = pm.Normal("mu", 0, 2), pm.HalfNormal("sigma", 2)
        pm.Normal("z", mu, sigma, observed=data("z_records", "z"))
        X = data("X", columns=["x0", "x1"])
        beta = pm.Normal("beta", 0, 2, shape=2)
        pm.Normal("w", mu=X @ beta, sigma=pm.HalfNormal("w_sigma", 1), observed=data("w_obs", "w"))
    return model


def exact_statistics(model, **options):
    bounds = {k: v for k, v in BOUNDS.items() if k in model.named_vars}
    recognised = recognise(model, "laplace", data_bounds=bounds, **options)
    return {name: link.statistics() for name, link in recognised.blocks.items()}


def small_model(source):
    """Grouped Bernoulli and Normal, from a pandas (pm.Data) or Dask (pymc_dp.Data) frame."""
    with pm.Model(coords={"region": LABELS}) as model:
        if isinstance(source, dd.DataFrame):
            group = pymc_dp.Data("group", source, column="region", categories=LABELS)
            y = pymc_dp.Data("y_records", source, column="y")
            z = pymc_dp.Data("z_records", source, column="z")
        else:
            group, y, z = (
                pm.Data(n, source[c].to_numpy())
                for n, c in (("group", "g"), ("y_records", "y"), ("z_records", "z"))
            )
        rate = pm.Beta("rate", 1, 1, dims="region")
        pm.Bernoulli("y", p=rate[group], observed=y)
        pm.Normal("z", pm.Normal("mu", 0, 2), pm.HalfNormal("sigma", 2), observed=z)
    return model


@pytest.mark.integration
@pytest.mark.parametrize("npartitions", [1, 7])
def test_dask_statistics_equal_the_in_memory_statistics_exactly(npartitions):
    frame = records()
    in_memory = exact_statistics(build(frame))
    dask_backed = exact_statistics(build(dd.from_pandas(frame, npartitions=npartitions)))
    assert set(in_memory) == set(dask_backed) == {"y", "trials4", "category", "y_count", "z", "w"}
    for name, table in in_memory.items():
        np.testing.assert_array_equal(dask_backed[name], table, err_msg=name)
    # a hand computation for two of them: the grouped successes and the Normal's n, Σu, Σu²
    # (u centred on the bounds' midpoint)
    np.testing.assert_array_equal(
        dask_backed["y"][:, 0], np.bincount(frame["g"], weights=frame["y"], minlength=3)
    )
    u = (frame["z"].to_numpy() + 1.0) / 4.0 - 0.5
    np.testing.assert_array_equal(dask_backed["z"], [[len(frame), u.sum(), (u * u).sum()]])


def test_summary_records_n_and_partitions():
    frame = dd.from_pandas(records(n=1_000), npartitions=4)
    links = recognise(build(frame), "laplace", data_bounds=BOUNDS).blocks
    for link in links.values():
        assert link.summary.n_records == 1_000
        assert link.summary.partitions == 4
        assert isinstance(link.data, DaskRecords)


@pytest.mark.integration
def test_sample_releases_the_same_noisy_statistics_as_in_memory():
    frame = records(n=2_000)
    traces = [
        pymc_dp.sample(
            50,
            model=small_model(source),
            epsilon=3.0,
            data_bounds={"z": BOUNDS["z"]},
            inference="plugin",
            noise_backend="numpy",
            noise_rng=np.random.default_rng(7),
            random_seed=1,
            **FAST,
        )
        for source in (frame, dd.from_pandas(frame, npartitions=5))
    ]
    memory, dask_trace = (t["released_statistics"].to_dataset() for t in traces)
    assert set(memory.data_vars) == set(dask_trace.data_vars)
    for name in memory.data_vars:
        np.testing.assert_array_equal(dask_trace[name].values, memory[name].values, err_msg=name)
    ledger = PrivacyLedger.from_datatree(traces[1])
    assert len(ledger.events) == 2 and ledger.epsilon == pytest.approx(3.0)
    assert {"observed_data", "constant_data"}.isdisjoint(traces[1].children)


def test_noise_aware_sample_from_dask_on_the_main_family():
    frame = dd.from_pandas(records(n=4_000), npartitions=3)
    with pm.Model(coords={"region": LABELS}):
        group = pymc_dp.Data("group", frame, column="region", categories=LABELS)
        rate = pm.Beta("rate", 1, 1, dims="region")
        pm.Bernoulli("y", p=rate[group], observed=pymc_dp.Data("y_records", frame, column="y"))
        idata = pymc_dp.sample(300, epsilon=10.0, random_seed=2, **FAST)
    truth = records(n=4_000).groupby("g")["y"].mean().to_numpy()
    mean = idata["posterior"]["rate"].mean(("chain", "draw")).values
    # 4,000 records in 3 groups: posterior sd ≈ 0.013 at most; ε = 10 adds noise of scale 0.2
    np.testing.assert_allclose(mean, truth, atol=0.05)


def test_dask_arrays_with_different_chunks_are_read_as_records():
    frame = records(n=1_500)
    y = da.from_array(frame["y"].to_numpy(), chunks=400)
    g = da.from_array(frame["g"].to_numpy(), chunks=700)
    with pm.Model(coords={"region": LABELS}) as model:
        rate = pm.Beta("rate", 1, 1, dims="region")
        pm.Bernoulli("y", p=rate[pymc_dp.Data("g", g)], observed=pymc_dp.Data("y_records", y))
    (link,) = recognise(model, "laplace").blocks.values()
    table = np.column_stack(
        [np.bincount(frame["g"], weights=frame["y"] == k, minlength=3) for k in (1, 0)]
    )
    np.testing.assert_array_equal(link.statistics(), table)
    assert link.summary.partitions == 4


@pytest.mark.integration
def test_parquet_round_trip(tmp_path):
    frame = records(n=2_500, seed=3)
    dd.from_pandas(frame, npartitions=5).to_parquet(tmp_path / "records")
    from_files = exact_statistics(build(dd.read_parquet(tmp_path / "records")))
    for name, table in exact_statistics(build(frame)).items():
        np.testing.assert_array_equal(from_files[name], table, err_msg=name)


def test_one_read_of_each_partition_for_every_likelihood_on_the_frame():
    frame = records(n=1_200)
    reads = []
    lock = threading.Lock()

    def load(i):
        with lock:
            reads.append(i)
        return frame.iloc[i * 300 : (i + 1) * 300]

    parts = [dask.delayed(load, pure=False)(i) for i in range(4)]
    source = dd.from_delayed(parts, meta=frame.iloc[:0])
    with dask.config.set(scheduler="threads"):
        recognise(small_model(source), "laplace", data_bounds={"z": BOUNDS["z"]})
    assert sorted(reads) == [0, 1, 2, 3]


def test_progress_bar_shows_the_pass_and_no_records(capsys):
    frame = records(n=500)
    frame.loc[0, "z"] = 2.9375  # a value that appears nowhere else
    with dask.config.set(scheduler="threads"):
        recognise(
            small_model(dd.from_pandas(frame, npartitions=3)),
            "laplace",
            data_bounds={"z": BOUNDS["z"]},
            progressbar=True,
        )
    shown = capsys.readouterr()
    assert "100% Completed" in shown.out
    assert "2.9375" not in shown.out + shown.err


@pytest.mark.parametrize(
    ("column", "bad", "expected"),
    [
        (
            "z",
            123456.75,
            r"z: invalid records in 1 of 4 partitions of its Dask records "
            r"\(the first: z: 1 values outside",
        ),
        ("y", 7, r"y: invalid records in 1 of 4 partitions"),
        ("region", "west", r"y: invalid records in 1 of 4 partitions.*group labels"),
    ],
)
def test_invalid_records_are_counted_never_echoed_and_charge_nothing(column, bad, expected):
    frame = records(n=800)
    frame[column] = frame[column].astype(object if column == "region" else float)
    frame.loc[650, column] = bad
    if column == "region":
        frame["region"] = frame["region"].astype(str)
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(InvalidPrivateDataError, match=expected) as info:
        pymc_dp.sample(
            10,
            model=small_model(dd.from_pandas(frame, npartitions=4)),
            epsilon=1.0,
            data_bounds={"z": BOUNDS["z"]},
            ledger=ledger,
            **FAST,
        )
    assert "123456" not in str(info.value) and "west" not in str(info.value)
    assert len(ledger) == 0


def test_missing_values_of_a_nullable_column_are_invalid():
    frame = records(n=400)
    frame["y"] = frame["y"].astype("Int64")
    frame.loc[[3, 250], "y"] = pd.NA
    with pytest.raises(InvalidPrivateDataError, match=r"y: invalid records in 2 of 2 partitions"):
        recognise(
            small_model(dd.from_pandas(frame, npartitions=2)),
            "laplace",
            data_bounds={"z": BOUNDS["z"]},
        )


def test_an_error_while_reading_is_reported_by_type_only():
    frame = records(n=300)

    def load(i):
        raise ValueError("could not convert 'Jane Doe, 1961-04-02' to float")

    source = dd.from_delayed([dask.delayed(load, pure=False)(i) for i in range(2)], meta=frame)
    with pytest.raises(InvalidPrivateDataError, match="failed with ValueError") as info:
        recognise(small_model(source), "laplace", data_bounds={"z": BOUNDS["z"]})
    assert "Jane" not in str(info.value)
    assert info.value.__context__ is None and info.value.__cause__ is None


def _dask_model(frame, extra):
    with pm.Model(coords={"region": LABELS}) as model:
        group = pymc_dp.Data("group", frame, column="region", categories=LABELS)
        rate = pm.Beta("rate", 1, 1, dims="region")
        y = pymc_dp.Data("y_records", frame, column="y")
        pm.Bernoulli("y", p=rate[group], observed=y)
        extra(model, y, group)
    return model


@pytest.mark.parametrize(
    ("extra", "options", "error", "match"),
    [
        (
            lambda m, y, g: pm.Deterministic("leak", y.sum()),
            {},
            NonPrivateModelError,
            "leak",
        ),
        (
            lambda m, y, g: pm.Potential("leak", g.sum()),
            {},
            NonPrivateModelError,
            "leak",
        ),
        (lambda m, y, g: None, {"public": ["group"]}, ValueError, "Dask-backed"),
        (
            lambda m, y, g: None,
            {"mechanism": "ops"},
            NonPrivateModelError,
            "Dask collection",
        ),
    ],
)
def test_refusals_charge_nothing(extra, options, error, match):
    model = _dask_model(dd.from_pandas(records(n=300), npartitions=2), extra)
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(error, match=match):
        pymc_dp.sample(10, model=model, epsilon=1.0, ledger=ledger, **(FAST | options))
    assert len(ledger) == 0


def test_records_of_one_likelihood_must_live_together():
    frame = records(n=300)
    dask_frame = dd.from_pandas(frame, npartitions=2)
    with pm.Model(coords={"region": LABELS}) as mixed:
        rate = pm.Beta("rate", 1, 1, dims="region")
        group = pm.Data("group", frame["g"].to_numpy())
        pm.Bernoulli("y", p=rate[group], observed=pymc_dp.Data("y_records", dask_frame, column="y"))
    with pytest.raises(NonPrivateModelError, match="in memory and the rest"):
        recognise(mixed, "laplace")
    other = dd.from_pandas(frame, npartitions=2)
    with pm.Model(coords={"region": LABELS}) as two_frames:
        rate = pm.Beta("rate", 1, 1, dims="region")
        group = pymc_dp.Data("group", other, column="g")
        pm.Bernoulli("y", p=rate[group], observed=pymc_dp.Data("y_records", dask_frame, column="y"))
    with pytest.raises(NonPrivateModelError, match="same Dask DataFrame"):
        recognise(two_frames, "laplace")


def test_per_record_trials_in_dask_are_refused():
    frame = dd.from_pandas(records(n=300), npartitions=2)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        trials = pymc_dp.Data("trials", frame, column="trials4")
        pm.Binomial("y", n=trials, p=p, observed=pymc_dp.Data("y_records", frame, column="y"))
    with pytest.raises(NonPrivateModelError, match="trials"):
        recognise(model, "laplace", max_trials={"y": 4})


def test_data_refuses_what_it_cannot_read():
    frame = dd.from_pandas(records(n=100), npartitions=2)
    with pm.Model():
        with pytest.raises(TypeError, match="'region' holds"):
            pymc_dp.Data("group", frame, column="region")
        with pytest.raises(ValueError, match="no column"):
            pymc_dp.Data("nope", frame)
        with pytest.raises(TypeError, match=r"use pm\.Data"):
            pymc_dp.Data("y", np.zeros(3))
        with pytest.raises(ValueError, match="distinct"):
            pymc_dp.Data("group", frame, column="region", categories=["a", "a"])


def test_links_without_summary_are_never_read_record_by_record():
    frame = dd.from_pandas(records(n=100), npartitions=2)
    with pm.Model(coords={"region": LABELS}) as model:
        rate = pm.Beta("rate", 1, 1, dims="region")
        group = pymc_dp.Data("group", frame, column="region", categories=LABELS)
        pm.Bernoulli("y", p=rate[group], observed=pymc_dp.Data("y_records", frame, column="y"))
    (link,) = recognise(model, "laplace").blocks.values()
    bare = type(link)(**{**link.__dict__, "summary": None})
    with pytest.raises(TypeError, match="one pass"):
        bare.statistics()
    assert summarise({"y": bare})["y"].summary.n_records == 100


@pytest.mark.integration
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 60), npartitions=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_any_partitioning_gives_the_in_memory_statistics(n, npartitions, seed):
    frame = records(n=n, seed=seed)
    source = dd.from_pandas(frame, npartitions=min(npartitions, n))
    with dask.config.set(scheduler="sync"):
        dask_backed = exact_statistics(small_model(source))
    for name, table in exact_statistics(small_model(frame)).items():
        np.testing.assert_array_equal(dask_backed[name], table, err_msg=name)


def test_dirichlet_mechanism_reads_dask_records():
    frame = records(n=500)
    with pm.Model() as model:
        probs = pm.Dirichlet("probs", a=np.ones(3))
        pm.Categorical(
            "category",
            p=probs,
            observed=pymc_dp.Data(
                "category_records", dd.from_pandas(frame, npartitions=3), column="category"
            ),
        )
    idata = pymc_dp.sample(
        20,
        model=model,
        epsilon=1e6,
        mechanism="dirichlet-lshist",
        noise_backend="numpy",
        noise_rng=np.random.default_rng(0),
        **FAST,
    )
    counts = np.bincount(frame["category"], minlength=3)
    # ε = 10⁶: the released α̃ − α is the histogram to within 10⁻⁵ (LSHist floors at c − 1)
    released = idata["released_statistics"]["category"].values.ravel()
    assert np.all(np.abs(released - counts) <= 1.0 + 1e-3)


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_pass_runs_on_a_local_distributed_cluster(capsys):
    distributed = pytest.importorskip("distributed")
    frame = records(n=1_000, seed=5)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        on_cluster = exact_statistics(build(dd.from_pandas(frame, npartitions=4)), progressbar=True)
    for name, table in exact_statistics(build(frame)).items():
        np.testing.assert_array_equal(on_cluster[name], table, err_msg=name)


def test_the_message_never_says_which_partition_holds_the_invalid_record():
    values = np.zeros(8)
    values[5] = 99.0  # outside the bounds; one record per partition
    z = da.from_array(values, chunks=1)
    with pm.Model() as model:
        pm.Normal("z", pm.Normal("mu", 0, 1), 1.0, observed=pymc_dp.Data("z_records", z))
    with pytest.raises(InvalidPrivateDataError, match=r"1 of 8 partitions") as info:
        recognise(model, "laplace", data_bounds={"z": (-1, 1)})
    assert "partition 5" not in str(info.value) and "99" not in str(info.value)


def test_per_record_trials_in_memory_are_refused_with_dask_records():
    frame = records(n=200)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        trials = pm.Data("trials", frame["trials4"].to_numpy()[:40])
        y = pymc_dp.Data("y_records", dd.from_pandas(frame, npartitions=5), column="y")
        pm.Binomial("y", n=trials, p=p, observed=y)
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(NonPrivateModelError, match="per-record trials are in memory"):
        pymc_dp.sample(5, model=model, epsilon=1.0, max_trials={"y": 4}, ledger=ledger, **FAST)
    assert len(ledger) == 0


def test_masked_arrays_and_set_data_are_refused():
    values = da.ma.masked_array(da.arange(10, chunks=5), mask=da.arange(10, chunks=5) == 3)
    with pm.Model(), pytest.raises(TypeError, match="masked"):
        pymc_dp.Data("y_records", values)
    frame = dd.from_pandas(records(n=100), npartitions=2)
    with pm.Model() as model:
        y = pymc_dp.Data("y_records", frame, column="y")
        pm.Bernoulli("y", p=pm.Beta("p", 1, 1), observed=y)
        pm.set_data({"y_records": np.ones(100, dtype=np.int64)})
    with pytest.raises(NonPrivateModelError, match="set_data"):
        recognise(model, "laplace")


def test_categories_are_for_labels_and_categorical_outcomes_only():
    frame = dd.from_pandas(records(n=100), npartitions=2)
    with pm.Model() as model:
        counts = pymc_dp.Data("count_records", frame, column="y_count", categories=[0, 1, 2])
        pm.Poisson("y_count", mu=pm.Gamma("lam", 2, 1), observed=counts)
    with pytest.raises(NonPrivateModelError, match="categories= was given"):
        recognise(model, "laplace", data_bounds={"y_count": (0, 8)})


def test_a_falsy_column_name_is_still_the_column():
    frame = dd.from_pandas(pd.DataFrame({0: [1, 0, 1, 1], "zero": [0, 0, 0, 0]}), npartitions=2)
    with pm.Model() as model:
        pm.Bernoulli("y", p=pm.Beta("p", 1, 1), observed=pymc_dp.Data("zero", frame, column=0))
    (link,) = recognise(model, "laplace").blocks.values()
    np.testing.assert_array_equal(link.statistics(), [[3.0, 1.0]])


def _reachable(value, depth=3):
    """``value`` and what its containers and dataclass fields hold, a few levels down."""
    yield value
    if depth == 0:
        return
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list | tuple | set):
        children = list(value)
    elif hasattr(value, "__dataclass_fields__"):
        children = [getattr(value, f, None) for f in value.__dataclass_fields__]
    else:
        children = []
    for child in children:
        yield from _reachable(child, depth - 1)


def test_an_invalid_record_leaves_no_exact_statistics_in_the_traceback():
    frame = records(n=400)
    frame["y"] = frame["y"].astype(float)
    frame.loc[7, "y"] = 5.0  # the Bernoulli is invalid; the Normal on z is valid
    with pytest.raises(InvalidPrivateDataError) as info:
        recognise(
            small_model(dd.from_pandas(frame, npartitions=2)), "laplace", data_bounds=BOUNDS_Z
        )
    from pymc_dp.families.base import RecordSummary
    from pymc_dp.records import _Part

    tb = info.value.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            for held in _reachable(value):
                assert not isinstance(held, RecordSummary | _Part), tb.tb_frame.f_code.co_name
        tb = tb.tb_next
