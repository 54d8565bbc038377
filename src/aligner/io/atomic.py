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
    file is removed and ``path`` is untouched; a file-system error (full disk, read-only or
    forbidden place) becomes one :class:`~aligner.errors.OutputError` naming ``path`` and what
    to do, anything else propagates.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
            try:
                # 0o666 minus the umask, like an ordinary open(); mkstemp would make it 0o600.
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                continue
    except OSError as exc:
        raise _output_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _output_error(path, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _output_error(path: Path, exc: OSError):
    """A one-line :class:`~aligner.errors.OutputError` naming the user's ``path`` (not the
    temporary file) and saying what to do."""
    import errno

    from aligner.errors import OutputError

    hint = {errno.ENOSPC: "the disk is full: free some space or write elsewhere",
            errno.EDQUOT: "the disk quota is used up: free some space or write elsewhere",
            errno.EROFS: "the file system is read-only: write elsewhere",
            errno.EACCES: "no permission to write there: write elsewhere or change its permissions",
            errno.EPERM: "no permission to write there: write elsewhere or change its permissions",
            errno.EISDIR: "that is a directory: give a file name",
            errno.ENOTDIR: "a part of that path is a file, not a directory"}.get(exc.errno, "")
    reason = exc.strerror or str(exc)
    return OutputError(f"{path}: cannot write it ({reason}){'; ' + hint if hint else ''}")


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
