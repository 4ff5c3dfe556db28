"""Recorded GPU figures tied to code: every row of notebooks/data/*.json names the PTX it was timed
with (kernel, config, arch, sha256); today's compiler must still emit that PTX (no GPU: compiled
here), or the row is marked stale and the notebook says "re-record" instead of showing it as
current."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tileworkbench.workbench.record_ptx import check_row, compile_entry, ptx_sha256
from tileworkbench.workbench.recorded import load_recorded

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "notebooks" / "data"
ROWS = [
    pytest.param(path.name, row, id=f"{path.stem}:{row['label']}")
    for path in sorted(DATA.glob("*.json"))
    for row in json.loads(path.read_text()).get("rows", [])  # 07: profiles, not timed rows
]


@pytest.mark.parametrize("name, row", ROWS)
def test_recorded_row_still_matches_todays_ptx(name, row):
    entry = row.get("ptx")
    assert entry, f"{name}: {row['label']} does not say which PTX it was timed with"
    if "sha256" not in entry:  # its config could not be reproduced: no hash was invented
        assert entry.get("stale"), f"{name}: {row['label']} has neither a PTX hash nor a stale mark"
        return
    check = check_row(row)
    if entry.get("stale"):  # known to be of older code: the notebook says re-record meanwhile
        assert not check.current, (
            f"{name}: {row['label']} is marked stale but today's PTX matches the recorded hash: "
            "remove the mark"
        )
        return
    assert check.current, (
        f"{name}: {row['label']}: {check.detail}. Re-record notebooks/data/ with "
        "bench/record_notebook_data.py on a GPU (until then the notebook says re-record)"
    )


def test_hash_ignores_the_checkout_folder_but_nothing_else():
    ptx = (
        '.version 8.0\n\t.file\t1 "/home/a/tileworkbench/workbench/showcase.py"\n'
        "add.s32 %r1, %r2, 1;\n"
    )
    moved = ptx.replace("/home/a/", "/work/main/")
    assert ptx_sha256(ptx) == ptx_sha256(moved)
    assert ptx_sha256(ptx) != ptx_sha256(ptx.replace("1;", "2;"))
    assert ptx_sha256(ptx) != ptx_sha256(ptx.replace("showcase.py", "other.py"))


def test_notebook_says_rerecord_when_the_ptx_differs(tmp_path):
    shutil.copy(DATA / "01_vector_add.json", tmp_path / "01_vector_add.json")
    current = load_recorded("01_vector_add", tmp_path)
    assert current.ptx_checks()[0].current and "re-record" not in repr(current).lower()
    data = json.loads((tmp_path / "01_vector_add.json").read_text())
    data["rows"][0]["ptx"]["sha256"] = "0" * 64  # as if the compiler had changed since
    (tmp_path / "01_vector_add.json").write_text(json.dumps(data))
    old = load_recorded("01_vector_add", tmp_path)
    text = repr(old)
    assert "RE-RECORD (older code): label=vector add 2^24 fp32" in text
    assert (
        "re-record vector add 2^24 fp32: today's compiler emits different PTX for add_kernel"
        in text
    )
    assert "older: re-record" in old._repr_html_()
    assert old.points()[0].label == "vector add 2^24 fp32 (older code: re-record)"


def test_a_row_without_a_hash_is_stale_not_invented():
    row = {"label": "x", "ptx": {"stale": "the config of this run was not recorded"}}
    check = check_row(row)
    assert check.status == "stale" and "config of this run was not recorded" in check.note("x")
    assert check_row({"label": "y"}).status == "untied"


def test_record_script_ties_each_row_to_the_ptx_it_timed(tmp_path, monkeypatch):
    """bench/record_notebook_data.py --interpret (no GPU): every row it writes carries an entry that
    compiles again to the hashed PTX."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from tileworkbench.config import config

    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    monkeypatch.setattr(config, "interpret", config.interpret)  # main() sets it; restored after
    sys.modules.pop("record_notebook_data", None)
    import record_notebook_data

    assert record_notebook_data.main(["--interpret", "--out", str(tmp_path)]) == 0
    for path in sorted(tmp_path.glob("*.json")):
        for row in json.loads(path.read_text())["rows"]:
            entry = row["ptx"]
            assert entry["target"] == "sm_90a" and entry["kernel"].startswith("tileworkbench.")
            assert ptx_sha256(compile_entry(entry)) == entry["sha256"], (path.name, row["label"])


def test_changed_rows_are_listed_and_can_be_marked_stale(tmp_path, capsys):
    from tileworkbench.workbench.record_ptx import main

    data = json.loads((DATA / "01_vector_add.json").read_text())
    data["rows"][0]["ptx"]["sha256"] = "f" * 64  # as if the compiler had changed since
    (tmp_path / "01_vector_add.json").write_text(json.dumps(data))
    assert main([str(tmp_path)]) == 1  # changed and not marked: what CI's test also refuses
    assert "vector add 2^24 fp32: changed (today's compiler emits" in capsys.readouterr().out
    assert main(["--mark-stale", str(tmp_path)]) == 0
    marked = json.loads((tmp_path / "01_vector_add.json").read_text())["rows"][0]["ptx"]
    assert marked["sha256"] == "f" * 64 and "different PTX" in marked["stale"]  # the hash is kept
    assert main([str(tmp_path)]) == 0
    assert "changed, marked stale" in capsys.readouterr().out
