"""`tileworkbench lab`: the bundled notebooks are copied to a folder of the user's (never over an
edited copy) and JupyterLab is started there; the notebooks ship inside the built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tileworkbench.cli import main
from tileworkbench.workbench.lab import MANIFEST, bundled_notebooks, copy_notebooks, lab_command

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_notebooks_are_found():
    folder = bundled_notebooks()
    assert (folder / "00_start_here.ipynb").is_file() and any(folder.glob("data/*.json"))


def test_copy_never_overwrites_an_edited_notebook(tmp_path):
    source = tmp_path / "bundled"
    shutil.copytree(bundled_notebooks(), source)
    mine = tmp_path / "mine"
    first = copy_notebooks(mine, source)
    assert "00_start_here.ipynb" in first.copied and "data/01_vector_add.json" in first.copied
    assert (mine / MANIFEST).is_file()
    edited = mine / "01_vector_add.ipynb"
    edited.write_text(edited.read_text().replace("vector", "VECTOR"))
    # a new tileworkbench version changes two notebooks: the unedited copy follows, the edited stays
    for name in ("00_start_here.ipynb", "01_vector_add.ipynb"):
        (source / name).write_text((source / name).read_text().replace("kernel", "kernel!"))
    second = copy_notebooks(mine, source)
    assert second.copied == ["00_start_here.ipynb"] and second.kept == ["01_vector_add.ipynb"]
    assert "kernel!" in (mine / "00_start_here.ipynb").read_text()
    assert "VECTOR" in edited.read_text() and "kernel!" not in edited.read_text()
    assert "01_vector_add.ipynb" in " ".join(second.lines())


def test_a_file_the_user_made_is_not_overwritten(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "00_start_here.ipynb").write_text("my own notes")
    result = copy_notebooks(mine)
    assert result.kept == ["00_start_here.ipynb"]
    assert (mine / "00_start_here.ipynb").read_text() == "my own notes"


def test_lab_dry_run_copies_and_prints_the_command(tmp_path, capsys):
    assert main(["lab", "--dir", str(tmp_path / "nb"), "--dry-run", "--no-browser"]) == 0
    out = capsys.readouterr().out
    assert "-m jupyterlab 00_start_here.ipynb --no-browser" in out
    assert (tmp_path / "nb" / "05_inside_the_compiler.ipynb").is_file()
    assert lab_command()[:3] == [sys.executable, "-m", "jupyterlab"]


def test_lab_passes_options_through_to_jupyterlab(tmp_path, capsys):
    argv = ["lab", "--dir", str(tmp_path / "nb"), "--dry-run", "--", "--port", "8899"]
    assert main(argv) == 0
    assert "00_start_here.ipynb --port 8899" in capsys.readouterr().out



def test_lab_as_root_allows_root(monkeypatch):
    """JupyterLab refuses to start as root (a container's usual user) without --allow-root."""
    import os

    monkeypatch.setattr(os, "geteuid", lambda: 0, raising=False)
    assert lab_command()[-1] == "--allow-root"
    assert lab_command(extra=["--allow-root"]).count("--allow-root") == 1
    monkeypatch.setattr(os, "geteuid", lambda: 1000, raising=False)
    assert "--allow-root" not in lab_command()

def test_lab_without_jupyterlab_says_how_to_install(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "jupyterlab" else real(name, *a),
    )
    assert main(["lab", "--dir", str(tmp_path / "nb")]) == 1
    assert 'pip install "tileworkbench[lab]"' in capsys.readouterr().err


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # --num-warps defaults to the target's (4 on GPUs), so its help says so rather than "(default: 4)"
    assert "(default: sm_90)" in text and "(default: ptx)" in text and "4 on GPUs" in text


def test_the_package_ships_the_notebooks(tmp_path):
    """setup.py's build step (what a wheel holds) puts the notebooks, their data and images inside
    the package. `build_py` rather than a whole wheel: it needs no `wheel` package or network."""
    pytest.importorskip("setuptools")
    source = tmp_path / "src"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    for name in files.stdout.split():
        if name.startswith(("tileworkbench/", "notebooks/")) or "/" not in name:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = tmp_path / "lib"
    proc = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(built)],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    package = built / "tileworkbench"
    for name in (
        "notebooks/00_start_here.ipynb",
        "notebooks/data/01_vector_add.json",
        "notebooks/images/report-ptx.png",
        "workbench/lab.py",
    ):
        assert (package / name).is_file(), name
