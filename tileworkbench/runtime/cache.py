"""The on-disk kernel cache: one directory of plain files per key (PTX, cubin, JSON), never pickle.

An entry is written into a temporary directory beside its final place and renamed into place, so a
reader sees a whole entry or none; when two processes write the same key, the loser's rename fails
and it drops its copy. Every entry carries a MANIFEST.json (file names, kinds, sizes, sha256); an
entry that does not match it, or whose JSON files do not parse, is deleted and reads as a miss, so
the caller recompiles.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path

MANIFEST = "MANIFEST.json"
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".trash-"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def cache_key(*parts: object) -> str:
    """The sha256 hex digest of `parts`, each str, bytes or a JSON-serialisable value.

    Each part is tagged with its kind and length, so ("ab", "c") and ("a", "bc") differ, and so do
    "1" and 1.
    """
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, bytes):
            tag, data = b"b", part
        elif isinstance(part, str):
            tag, data = b"s", part.encode()
        else:
            try:
                text = json.dumps(part, sort_keys=True, separators=(",", ":"))
            except (TypeError, ValueError):
                raise TypeError(f"cache_key: cannot hash a part of type {type(part).__name__}")
            tag, data = b"j", text.encode()
        digest.update(tag + str(len(data)).encode() + b":" + data)
    return digest.hexdigest()


class KernelCache:
    """A directory of cache entries, each a directory named by its key.

    Args:
        root: where entries live; default `config.cache_dir`, read when the cache is used, so
            setting `tileworkbench.config.config.cache_dir` later moves it.
    """

    def __init__(self, root: Path | str | None = None):
        self._root = Path(root) if root is not None else None

    @property
    def root(self) -> Path:
        if self._root is not None:
            return self._root
        from tileworkbench.config import config

        return Path(config.cache_dir)

    def path(self, key: str) -> Path:
        """The directory of the entry `key` (which may not exist)."""
        _check_name(key, "key")
        return self.root / key

    def get(self, key: str) -> dict[str, bytes | str] | None:
        """The files of entry `key` (text files as str, binary files as bytes), or None on a miss.

        A corrupt or partial entry is deleted and reported as a miss.
        """
        entry = self.path(key)
        try:
            manifest_text = (entry / MANIFEST).read_text()
        except FileNotFoundError:
            if entry.exists():  # a directory without its manifest: not ours, or half gone
                self._discard(entry)
            return None
        except OSError:
            self._discard(entry)
            return None
        files = _read_entry(entry, manifest_text)
        if files is None:
            self._discard(entry)
        return files

    def put(self, key: str, files: dict[str, bytes | str]) -> None:
        """Store `files` (name -> str or bytes) as entry `key`, atomically.

        If a valid entry for `key` already exists (another process won the race), this keeps it.
        """
        entry = self.path(key)
        for name in files:
            _check_name(name, "file name")
            if name == MANIFEST:
                raise ValueError(f"{MANIFEST} is reserved for the cache itself")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f"{_TMP_PREFIX}{key}-{os.getpid()}-{uuid.uuid4().hex}"
        try:
            _write_entry(tmp, files)
            if not _rename(tmp, entry) and self.get(key) is None:
                # the entry in the way was corrupt (get deleted it): try once more
                _rename(tmp, entry)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def keys(self) -> list[str]:
        """The keys of the entries now on disk (not checked: `get` checks)."""
        if not self.root.is_dir():
            return []
        names = (p.name for p in self.root.iterdir() if (p / MANIFEST).is_file())
        return sorted(name for name in names if _is_entry_name(name))

    def clear(self) -> None:
        """Delete every entry and leftover temporary directory; other files in root are kept."""
        if not self.root.is_dir():
            return
        for child in self.root.iterdir():
            ours = (
                child.name.startswith((_TMP_PREFIX, _TRASH_PREFIX)) or (child / MANIFEST).exists()
            )
            if child.is_dir() and ours:
                shutil.rmtree(child, ignore_errors=True)

    def _discard(self, entry: Path) -> None:
        """Move a bad entry out of the way first, so a concurrent put can land while we delete."""
        trash = entry.with_name(f"{_TRASH_PREFIX}{entry.name}-{uuid.uuid4().hex}")
        try:
            os.rename(entry, trash)
        except OSError:
            return  # someone else moved or replaced it already
        shutil.rmtree(trash, ignore_errors=True)


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 200:
        raise ValueError(f"invalid cache {what} {name!r}: use letters, digits, '_', '.', '-'")


def _is_entry_name(name: str) -> bool:
    return not name.startswith(".") and _NAME.fullmatch(name) is not None


def _write_entry(directory: Path, files: dict[str, bytes | str]) -> None:
    directory.mkdir()
    manifest = {}
    for name, content in files.items():
        kind = "text" if isinstance(content, str) else "bytes"
        data = content.encode() if isinstance(content, str) else bytes(content)
        (directory / name).write_bytes(data)
        manifest[name] = {
            "kind": kind,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    # the manifest goes last: an entry with a manifest had all its files written before it
    (directory / MANIFEST).write_text(json.dumps({"version": 1, "files": manifest}, indent=1))


def _rename(src: Path, dst: Path) -> bool:
    """Rename src onto dst; False when dst already exists (a directory rename never overwrites)."""
    try:
        os.rename(src, dst)
        return True
    except OSError:
        if dst.exists():
            return False
        raise


def _read_entry(entry: Path, manifest_text: str) -> dict[str, bytes | str] | None:
    """The entry's files if they match the manifest and its JSON files parse; None otherwise."""
    try:
        listing = json.loads(manifest_text)["files"]
        files: dict[str, bytes | str] = {}
        for name, info in listing.items():
            data = (entry / name).read_bytes()
            if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
                return None
            files[name] = data.decode() if info["kind"] == "text" else data
            if name.endswith(".json"):
                json.loads(data)
        return files
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
