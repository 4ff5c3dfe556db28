"""A tune whose configs compile on a real local Dask cluster (distributed.LocalCluster: two
worker processes), and a worker killed while it compiles a config: Dask reschedules that config on
the other worker and the build finishes, saying which config needed a second attempt."""

from __future__ import annotations

import os
import signal
import time

import pytest

distributed = pytest.importorskip("distributed")

import tileworkbench as tw  # noqa: E402
from tileworkbench.config import config as settings  # noqa: E402
from tileworkbench.runtime import parallel_compile  # noqa: E402

from test_parallel_compile import CONFIGS, _check, _expected, _jobs, _rows, scale_rows  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


@pytest.fixture
def cpu_target(monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "target", "cpu")
    monkeypatch.setattr(settings, "interpret", False)
    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")


def test_a_tune_compiles_on_a_dask_cluster(client, cpu_target):
    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=2,
                        executor=client)(scale_rows)
    x, out = _rows(n_cols=33)
    tuned[(x.shape[0],)](x, out, x.shape[1], -0.75)
    _check(out, _expected(x, -0.75))
    worker_pids = set(client.run(os.getpid).values())
    for config, result in tuned.last_results.items():
        # screened (the parallel tuner's default): every config has a screen time, the finalists
        # a full one too
        assert result["screen_ms"] > 0 and result.get("ms", 1) > 0, result
        assert result["finalist"] == ("ms" in result), result
        assert int(result["where"]["compiled"].split()[1]) in worker_pids, result
    from tileworkbench.runtime.cache import KernelCache

    # the workers compiled into their own caches and sent the entries back
    assert len(KernelCache().keys()) == len(CONFIGS)


def _build_killing_one_worker(client, jobs, markers):
    """Build `jobs` on the cluster, SIGKILLing the worker of a config it started; returns what was
    built and (label, pid) of the config whose worker was killed."""
    built = []
    killed = None
    for item in parallel_compile.build(jobs, executor=client, marker_dir=str(markers)):
        built.append(item)
        if killed is None:  # kill a worker in the middle of a config it started
            finished = {b.label for b in built}
            deadline = time.monotonic() + 60
            while killed is None and time.monotonic() < deadline:
                for name in os.listdir(markers):
                    label, pid, _ = name.split(".")
                    if label not in finished:
                        killed = (label, int(pid))
                        break
                time.sleep(0.01)
            assert killed is not None, "no config was being compiled"
            os.kill(killed[1], signal.SIGKILL)
    return built, killed


def test_a_dask_worker_killed_mid_build_loses_only_its_config(client, cpu_target, tmp_path):
    jobs = _jobs(6)
    # the kill can land just after the worker finished that config (its result still on the way);
    # then nothing was lost and nothing retried: build again until a kill lands mid-config
    for round_ in range(4):
        markers = tmp_path / f"markers{round_}"
        markers.mkdir()
        built, killed = _build_killing_one_worker(client, jobs, markers)
        assert sorted(b.label for b in built) == sorted(jobs)
        assert all(b.error is None and b.fallback is None for b in built), built
        again = {b.label: b for b in built}[killed[0]]
        client.wait_for_workers(2, timeout=60)
        if again.attempts == 1:  # finished before the kill, on the killed worker
            assert again.where == f"pid {killed[1]}", again
            continue
        assert again.attempts == 2 and "a worker died" in again.notes[0], again
        assert again.where != f"pid {killed[1]}"
        break
    else:
        pytest.fail("in 4 builds no kill landed while its config was compiling")
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the other tests
