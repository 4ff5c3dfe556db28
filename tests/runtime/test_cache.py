"""The on-disk kernel cache: round trips, key stability, atomic concurrent writes, corrupt entries."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading

import numpy as np
import pytest

from tileworkbench.runtime.cache import MANIFEST, KernelCache, cache_key


def _entry(seed: int) -> dict[str, bytes | str]:
    rng = np.random.default_rng(seed)
    return {
        "kernel.ptx": f"// ptx {seed}\n.version 8.0\n" + "x" * int(rng.integers(10, 5000)),
        "kernel.cubin": rng.integers(
            0, 256, int(rng.integers(100, 20000)), dtype=np.uint8
        ).tobytes(),
        "metadata.json": json.dumps({"num_warps": int(rng.integers(1, 9)), "seed": seed}),
    }


def test_round_trip_keeps_text_and_bytes(tmp_path):
    cache = KernelCache(tmp_path)
    files = _entry(1)
    key = cache_key("round trip")
    assert cache.get(key) is None
    cache.put(key, files)
    assert cache.get(key) == files
    assert isinstance(cache.get(key)["kernel.ptx"], str)
    assert isinstance(cache.get(key)["kernel.cubin"], bytes)
    assert key in cache.keys()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cache_key_is_stable_and_separates_parts():
    key = cache_key("source", b"\x00\x01", 4, {"BLOCK": 1024, "a": [1, 2]})
    assert key == cache_key("source", b"\x00\x01", 4, {"a": [1, 2], "BLOCK": 1024})
    assert len(key) == 64 and int(key, 16) >= 0
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("1") != cache_key(1)
    assert cache_key("x") != cache_key(b"x")
    # a fixed value, so a change of the hashing scheme (which orphans users' caches) is noticed
    assert (
        cache_key("tileworkbench")
        == "c5495d1824c1a287ff4cf484036a094a3cbabc18a1a2ae84446f607e65ef7a1b"
    )


def test_cache_key_rejects_unhashable_parts():
    with pytest.raises(TypeError, match="object"):
        cache_key(object())


def test_bad_key_and_file_names_are_refused(tmp_path):
    cache = KernelCache(tmp_path)
    with pytest.raises(ValueError, match="key"):
        cache.get("../escape")
    with pytest.raises(ValueError, match="file name"):
        cache.put(cache_key("k"), {"sub/dir.ptx": "x"})
    with pytest.raises(ValueError, match="reserved"):
        cache.put(cache_key("k"), {MANIFEST: "{}"})


@pytest.mark.parametrize(
    "damage",
    ["delete_metadata", "bad_json", "truncate_cubin", "no_manifest", "bad_manifest"],
)
def test_corrupt_entry_reads_as_miss_and_is_deleted(tmp_path, damage):
    cache = KernelCache(tmp_path)
    key = cache_key("corrupt", damage)
    cache.put(key, _entry(2))
    entry = cache.path(key)
    if damage == "delete_metadata":
        (entry / "metadata.json").unlink()
    elif damage == "bad_json":
        (entry / "metadata.json").write_text("{not json")
    elif damage == "truncate_cubin":
        data = (entry / "kernel.cubin").read_bytes()
        (entry / "kernel.cubin").write_bytes(data[: len(data) // 2])
    elif damage == "no_manifest":
        (entry / MANIFEST).unlink()
    else:
        (entry / MANIFEST).write_text("[1, 2")
    assert cache.get(key) is None
    assert not entry.exists()
    # the caller recompiles and stores again: the fresh entry is served
    cache.put(key, _entry(3))
    assert cache.get(key) == _entry(3)


def test_json_file_that_does_not_parse_is_never_served(tmp_path):
    cache = KernelCache(tmp_path)
    key = cache_key("json")
    cache.put(key, {"metadata.json": "{truncated", "kernel.ptx": "ptx"})
    assert cache.get(key) is None
    assert not cache.path(key).exists()


def test_put_over_a_corrupt_entry_replaces_it(tmp_path):
    cache = KernelCache(tmp_path)
    key = cache_key("replace")
    cache.path(key).mkdir(parents=True)
    (cache.path(key) / "junk").write_text("half written by a crashed process")
    cache.put(key, _entry(4))
    assert cache.get(key) == _entry(4)


def test_concurrent_thread_writers_leave_one_whole_entry(tmp_path):
    cache = KernelCache(tmp_path)
    key = cache_key("threads")
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(seed: int) -> None:
        try:
            barrier.wait()
            cache.put(key, _entry(seed))
            got = cache.get(key)
            assert got in [_entry(s) for s in range(8)]
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert cache.get(key) in [_entry(s) for s in range(8)]
    assert sorted(os.listdir(tmp_path)) == [key]  # no temporary directories left behind


def _process_writer(root: str, key: str, seed: int) -> None:
    KernelCache(root).put(key, _entry(seed))


def test_concurrent_process_writers_leave_one_whole_entry(tmp_path):
    key = cache_key("processes")
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    processes = [
        context.Process(target=_process_writer, args=(str(tmp_path), key, seed))
        for seed in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    assert KernelCache(tmp_path).get(key) in [_entry(s) for s in range(4)]
    assert sorted(os.listdir(tmp_path)) == [key]


def test_clear_removes_entries_but_not_foreign_files(tmp_path):
    cache = KernelCache(tmp_path)
    for seed in range(3):
        cache.put(cache_key("clear", seed), _entry(seed))
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "other_dir").mkdir()
    cache.clear()
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "other_dir"]
    assert cache.keys() == []


def test_default_root_follows_config(tmp_path, monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "cache_dir", tmp_path / "moved")
    cache = KernelCache()
    cache.put(cache_key("default"), {"metadata.json": "{}"})
    assert (tmp_path / "moved" / cache_key("default") / "metadata.json").exists()
