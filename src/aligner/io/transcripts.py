"""Reading a small text input file with one-line errors that name it."""

from __future__ import annotations

from pathlib import Path

from aligner.errors import AlignerError


def read_text(path: Path, what: str, error: type = AlignerError) -> str:
    """The UTF-8 text of ``path``; raises ``error`` naming the file when it is missing, a
    directory, not UTF-8 or unreadable. ``what`` names the kind of file ("transcript", ...)."""
    path = Path(path)
    if not path.exists():
        raise error(f"{path}: {what} not found")
    if path.is_dir():
        raise error(f"{path}: is a directory, not a {what}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not a UTF-8 text file, so not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
