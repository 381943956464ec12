"""Verified, atomic, locked files in the on-disk cache.

The caches (optimised IR, ``dsl.ir_cache``; lowered kernels, ``lowering.cache``;
compiled-CPU shared objects, ``lowering.cpu``) keep their entries through these
helpers, so that nothing read from disk is trusted without checking it:

- ``locked(path)``: an exclusive ``flock`` on ``path`` for the duration of a block,
  so that concurrent first compiles of one key are serialised and no process loads
  an entry while another writes it. Whatever occupies the lock's path (a directory,
  a dangling link) is cleared first.
- ``write_atomic(path, data)``: write to a temporary file in the same folder, then
  rename over ``path``: readers see the old entry or the new one, never half.
- ``read_verified(path, digest)``: the bytes of ``path`` only if their SHA-256 is
  ``digest`` (a truncated, edited or foreign file reads as missing).
- ``clear(path)``: remove whatever occupies ``path`` (file, link or directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from dsl.errors import DSLError


class CacheFolderError(DSLError):
    """The cache folder (``DSL_CACHE_DIR``, ``Options.cache_dir``) cannot be written."""


def cache_folder(root: Path, name: str) -> Path:
    """``root / name``, made if missing; ``CacheFolderError`` naming the setting when
    it cannot be (a file, or a folder this process may not write)."""
    folder = root / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CacheFolderError(f"the cache folder {root} (DSL_CACHE_DIR, Options.cache_dir) "
                               f"cannot hold {name}: {err.strerror or err}") from None
    return folder


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def clear(path: Path) -> None:
    """Remove whatever is at ``path``: a file, a link or a directory tree."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created as an empty file) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_file():
        clear(path)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    if path.exists() and not path.is_file():
        clear(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_verified(path: Path, digest: str | None) -> bytes | None:
    """``path``'s bytes when they hash to ``digest``; None otherwise (missing,
    unreadable, a directory, or different content)."""
    if digest is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:  # missing, a directory, unreadable
        return None
    return data if sha256(data) == digest else None
