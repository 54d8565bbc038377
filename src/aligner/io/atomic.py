"""Atomic writes: readers see the old file or the whole new one, never part of it.

Every output the package writes (TextGrids, CSVs, model bundles) goes through here.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically.

    Writes a temporary file in the same directory (``.NAME.RANDOM.tmp``, permissions as an
    ordinary ``open()`` gives), fsyncs it, ``os.replace``-s it onto ``path`` and fsyncs the
    directory. Creates missing parent directories. On any error (or interrupt) the temporary
    file is removed and the exception propagates; ``path`` is then untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            # 0o666 minus the umask, like an ordinary open(); mkstemp would make it 0o600.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make a rename durable on POSIX; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write_bytes`), encoded with
    ``encoding``; line endings are written as ``\\n``. An encoding error leaves ``path`` untouched."""
    atomic_write_bytes(path, text.encode(encoding))
