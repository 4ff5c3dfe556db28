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
    assert "-m jupyterlab --LabApp.default_url=/lab/tree/00_start_here.ipynb --no-browser" in out
    assert (tmp_path / "nb" / "05_inside_the_compiler.ipynb").is_file()
    assert lab_command()[:3] == [sys.executable, "-m", "jupyterlab"]


def test_lab_passes_options_through_to_jupyterlab(tmp_path, capsys):
    argv = ["lab", "--dir", str(tmp_path / "nb"), "--dry-run", "--", "--port", "8899"]
    assert main(argv) == 0
    assert "00_start_here.ipynb --port 8899" in capsys.readouterr().out


def test_lab_copies_the_puzzles_with_their_subfolders(tmp_path):
    source = tmp_path / "bundled"
    shutil.copytree(bundled_notebooks(), source)
    (source / "puzzles" / "extra" / "data").mkdir(parents=True)
    (source / "puzzles" / "extra" / "data" / "p.json").write_text("{}")
    (source / "puzzles" / "__pycache__").mkdir(exist_ok=True)
    (source / "puzzles" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    result = copy_notebooks(tmp_path / "mine", source)
    assert "puzzles/puzzles.ipynb" in result.copied and "puzzles/extra/data/p.json" in result.copied
    assert not any("__pycache__" in name for name in result.copied)
    assert (tmp_path / "mine" / "puzzles" / "extra" / "data" / "p.json").read_text() == "{}"


# JupyterLab installs its own SIGINT handler; so does the stand-in, so that a SIGINT ignored or
# blocked in the test runner's process (which a child inherits) cannot keep it serving
FAKE_JUPYTERLAB = """
import http.server, os, pathlib, signal, sys
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)
port = int(sys.argv[sys.argv.index("--port") + 1])
pathlib.Path(os.environ["FAKE_LAB_PID"]).write_text(f"{os.getpid()} {os.getcwd()} {sys.argv[1:]}")
server = http.server.HTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
print(f"http://127.0.0.1:{port}/lab/tree/00_start_here.ipynb", flush=True)
server.serve_forever()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")  # a zombie is no process left behind
    return not (status.is_file() and status.read_text().split(") ")[1].startswith("Z"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_leaves_no_jupyterlab_behind(tmp_path):
    """`tileworkbench lab` on a free port with a stand-in JupyterLab (an HTTP server); SIGINT to the
    command stops the server itself: the command became JupyterLab (exec), no child stays."""
    import os
    import signal
    import urllib.request

    fake = tmp_path / "fake" / "jupyterlab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(FAKE_JUPYTERLAB)
    port, pid_file = _free_port(), tmp_path / "lab.pid"
    env = dict(os.environ, FAKE_LAB_PID=str(pid_file),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), str(ROOT)]))
    lab = subprocess.Popen(
        [sys.executable, "-m", "tileworkbench.cli", "lab", "--dir", str(tmp_path / "nb"),
         "--no-browser", "--", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        lines = [lab.stdout.readline() for _ in range(2)]
        assert "copied" in lines[0] and f"127.0.0.1:{port}" in lines[1], lines
        urllib.request.urlopen(f"http://127.0.0.1:{port}/00_start_here.ipynb", timeout=10)
        pid, cwd, argv = pid_file.read_text().split(" ", 2)
        assert int(pid) == lab.pid  # exec: the command is the server, no child of it
        assert Path(cwd) == (tmp_path / "nb").resolve()
        assert "--LabApp.default_url=/lab/tree/00_start_here.ipynb" in argv
        config = tmp_path / "nb" / ".jupyter" / "jupyter_server_config.json"  # the HTML export's
        assert "StaticReports" in config.read_text()
        lab.send_signal(signal.SIGINT)
        assert lab.wait(timeout=20) != 0
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
    assert not _alive(int(pid))
    with pytest.raises(OSError):  # nothing serves on the port any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)



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
        "notebooks/puzzles/puzzles.ipynb",
        "workbench/lab.py",
    ):
        assert (package / name).is_file(), name
