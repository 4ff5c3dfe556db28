"""`tileworkbench lab`: copy the bundled teaching notebooks and puzzles to a folder the user owns and
open JupyterLab there on notebook 00 (the URL it prints lands on it). The command replaces itself with
JupyterLab (`os.execvp`), so an interrupt reaches JupyterLab itself and leaves no server behind.

The notebooks ship inside the package (`tileworkbench/notebooks/`, from the repository's
`notebooks/`).
A copy the user has edited is never overwritten: a manifest in the folder records what was copied,
so a later run updates only the files still as they were copied, and keeps every edited one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DIR = "tileworkbench-notebooks"
FIRST_NOTEBOOK = "00_start_here.ipynb"
MANIFEST = ".tileworkbench-notebooks.json"  # relative path -> sha256 of the copy we wrote
PATTERNS = ("*.ipynb", "data/*.json", "images/*.png")
CONFIG_DIR = ".jupyter"  # on JupyterLab's JUPYTER_CONFIG_PATH: nbconvert_static.py's config
PUZZLES = "puzzles"  # copied whole, subfolders too (but no caches or checkpoints)
SKIPPED = ("__pycache__", ".ipynb_checkpoints")


def bundled_files(source: Path) -> list[Path]:
    """The files `copy_notebooks` copies: the notebooks with their data and images, and every file
    under puzzles/ (but hidden files, caches and checkpoints)."""
    files = [path for pattern in PATTERNS for path in sorted(source.glob(pattern))]
    files += sorted(
        path
        for path in (source / PUZZLES).rglob("*")
        if path.is_file()
        and not any(
            part in SKIPPED or part.startswith(".") for part in path.relative_to(source).parts
        )
    )
    return files


def bundled_notebooks() -> Path:
    """The notebooks folder: inside the installed package, else the repository's (a source checkout
    or an editable install)."""
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "notebooks", package.parent / "notebooks"):
        if (folder / FIRST_NOTEBOOK).is_file():
            return folder
    raise FileNotFoundError(
        f"the bundled notebooks are missing (looked in {package / 'notebooks'} and "
        f"{package.parent / 'notebooks'}); reinstall tileworkbench"
    )


@dataclass
class CopyResult:
    """What `copy_notebooks` did, file by file (paths relative to the folder)."""

    folder: Path
    copied: list[str] = field(default_factory=list)  # new, or updated where unedited
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # edited by the user: left as they are

    def lines(self) -> list[str]:
        out = [
            f"notebooks in {self.folder}: {len(self.copied)} copied, "
            f"{len(self.unchanged)} already up to date, {len(self.kept)} of yours kept"
        ]
        if self.kept:
            out.append(
                "kept as you edited them (not overwritten): "
                + ", ".join(self.kept)
                + "; for fresh copies run `tileworkbench lab --dir ANOTHER_FOLDER`"
            )
        return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_notebooks(folder: Path, source: Path | None = None) -> CopyResult:
    """Copy the bundled notebooks (with their data and images) and the puzzles into `folder`, never
    overwriting a file the user has changed since it was copied."""
    source = source or bundled_notebooks()
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    result = CopyResult(folder)
    for src in bundled_files(source):
        name = src.relative_to(source).as_posix()
        dest = folder / name
        new = _digest(src)
        if dest.exists():
            have = _digest(dest)
            if have == new:
                manifest[name] = new
                result.unchanged.append(name)
                continue
            if manifest.get(name) != have:  # not the copy we wrote: the user's edit
                result.kept.append(name)
                continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        manifest[name] = new
        result.copied.append(name)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return result


def lab_command(no_browser: bool = False, extra: list[str] | None = None) -> list[str]:
    """The command that starts JupyterLab (in the notebooks' folder) on notebook 00: the URL it
    prints and the browser it opens land on the notebook (`default_url`), not on the file browser.
    As root (a container's usual user) it adds `--allow-root`: JupyterLab would otherwise refuse."""
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--LabApp.default_url=/lab/tree/{FIRST_NOTEBOOK}",
    ]
    if no_browser:
        command.append("--no-browser")
    command += list(extra or [])
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in command:
        command.append("--allow-root")
    return command


def main_lab(
    folder: str, no_browser: bool = False, dry_run: bool = False, extra: list[str] | None = None
) -> int:
    """Copy the notebooks and start JupyterLab there (`dry_run`: copy, print the command only);
    `extra` goes to JupyterLab as it is (`--port 8899`, ...)."""
    path = Path(folder).expanduser().resolve()
    try:
        result = copy_notebooks(path)
    except OSError as exc:  # FileNotFoundError too: the notebooks or the folder
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines()))
    if importlib.util.find_spec("nbconvert") is not None:
        from .nbconvert_static import write_config

        write_config(path / CONFIG_DIR)  # an HTML export shows the reports' static view, offline
    command = lab_command(no_browser, extra)
    if dry_run:
        print(f"would run in {path}: {' '.join(command)}")
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        print(
            "error: JupyterLab is not installed in this environment: "
            'pip install "tileworkbench[lab]" (or open the notebooks above in any Jupyter)',
            file=sys.stderr,
        )
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    return run_in(path, command)


def run_in(folder: Path, command: list[str]) -> int:
    """Run `command` in `folder` as this process (`os.execvpe`: Ctrl-C and kill reach JupyterLab
    itself, no parent is left to orphan it), with the folder's `.jupyter/` on JUPYTER_CONFIG_PATH.
    Where exec does not replace the process (Windows), a child that shares the console's Ctrl-C."""
    env = dict(os.environ)
    config = str(folder / CONFIG_DIR)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        p for p in (config, env.get("JUPYTER_CONFIG_PATH", "")) if p
    )
    if os.name == "posix":
        os.chdir(folder)
        os.execvpe(command[0], command, env)  # returns only by raising OSError
    child = subprocess.Popen(command, cwd=folder, env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached JupyterLab too (one console): wait for it to stop
        return child.wait()
