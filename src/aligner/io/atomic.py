"""Atomic writes: readers see the old file or the whole new one, never part of it.

Every output the package writes (TextGrids, CSVs, model bundles) goes through here.

Atomic, not durable, by default (issue 15). A write is a temporary file in the same directory
renamed onto the target (``os.replace``): another process, or this one after an interrupt or a
crash of the program, sees the old file or the whole new one, never half of one. What fsync
would add is durability against a crash of the *operating system* or a power cut in the few
seconds before the kernel writes the data back: the file's fsync makes its bytes durable before
the rename, the directory's fsync makes the rename itself durable. Both together cost 7-9 ms of
wall time per file on the development machine's ext4 (0.3-0.9 ms without; 120 TextGrid-sized
files written in a loop), more than aligning a 3-second utterance costs on one core: a corpus
of 10 000 files would wait over a minute on the disk. Outputs are cheap to make again, and what
fsync protects against is covered otherwise: ext4 (``auto_da_alloc``, its default) writes a
file's data before committing a rename that replaces an existing file; an output left empty by
a power cut is redone by ``align-corpus --resume`` (it keeps only non-empty outputs); a model
bundle damaged that way fails to load with a one-line error.

So no fsync unless asked: ``durable=True`` (per call), or the environment variable
``ALIGNER_DURABLE_WRITES=1`` (every write of the process, e.g. on a machine prone to power
cuts), fsyncs the file before the rename and the directory after it, as before.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Optional


def _durable_by_default() -> bool:
    return os.environ.get("ALIGNER_DURABLE_WRITES", "").strip().lower() not in ("", "0", "false", "no")


#: times :func:`atomic_write_bytes` makes its output's folder and opens again after the folder was
#: missing (another process may be making it at the same moment) before it gives up
MISSING_DIRECTORY_TRIES = 3


def atomic_write_bytes(path: str | os.PathLike, data: bytes, durable: Optional[bool] = None) -> None:
    """Write ``data`` to ``path`` atomically.

    Writes a temporary file in the same directory (``.NAME.RANDOM.tmp``, permissions as an
    ordinary ``open()`` gives) and ``os.replace``-s it onto ``path``. Creates missing parent
    directories. On any error (or interrupt) the temporary file is removed and ``path`` is
    untouched; a file-system error (full disk, read-only or forbidden place) becomes one
    :class:`~aligner.errors.OutputError` naming ``path`` and what to do, anything else
    propagates. ``durable`` (None: ``ALIGNER_DURABLE_WRITES``, off unless set; module
    docstring): also fsync the file before the rename and the directory after it, so the new
    file survives a power cut.
    """
    if durable is None:
        durable = _durable_by_default()
    path = Path(path)
    missing = 0
    try:
        while True:
            tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
            try:
                # 0o666 minus the umask, like an ordinary open(); mkstemp would make it 0o600.
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                continue
            except FileNotFoundError:
                # the directories are made only when missing (a syscall saved per file); another
                # process writing into the same new folder may make them between the open and
                # here, so the open is tried again once they exist, not given up
                missing += 1
                if missing > MISSING_DIRECTORY_TRIES:
                    raise
                path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _output_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _output_error(path, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
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


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8",
                      durable: Optional[bool] = None) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write_bytes`, ``durable`` likewise),
    encoded with ``encoding``; line endings are written as ``\\n``. An encoding error leaves
    ``path`` untouched."""
    atomic_write_bytes(path, text.encode(encoding), durable)
