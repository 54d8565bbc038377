"""What every command shares: one-line errors, exit codes, progress bars, failure lists."""

from __future__ import annotations

import sys

import click


def printable(text) -> str:
    """``text`` safe to print whatever the terminal's encoding: a file name that is not valid
    UTF-8 (its bytes kept by Python as surrogate escapes) shows its odd bytes as ``\\xe9``."""
    return str(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def echo(message="", err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of :func:`printable` text."""
    click.echo(printable(message), err=err, nl=nl)  # the one raw echo


def warnings_as_lines() -> None:
    """Show Python warnings (a repaired recording, a TextGrid longer than its audio, ...) as one
    line ``warning: MESSAGE`` on stderr, without the source line Python prints."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        try:
            click.echo(printable(f"warning: {text}"), err=True)
        except Exception:
            pass

    warnings.showwarning = show


def fail(message: str, code: int = 1):
    echo(f"error: {message}", err=True)
    sys.exit(code)


def run(fn, *args, **kwargs):
    """Call the API; bad input becomes a one-line error and exit status 1."""
    from aligner.errors import AlignerError

    try:
        return fn(*args, **kwargs)
    except AlignerError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))


class _NoBar:
    """What :func:`progress_bar` returns when no bar is shown: ``update`` and ``close`` do nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str):
    """A tqdm bar on stderr when it is a terminal; else (tqdm's ``disable=None`` would show
    nothing either) a :class:`_NoBar`, without importing tqdm (70 ms of start-up)."""
    try:
        interactive = sys.stderr.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="file", file=sys.stderr, disable=None, dynamic_ncols=True)


def exit_if_failed(failed: list, what: str) -> None:
    """List ``failed`` ``(item, message)`` pairs on stderr under ``N <what>:`` and exit 1."""
    if failed:
        echo(f"{len(failed)} {what}:", err=True)
        for _, message in failed:
            echo(f"  {message}", err=True)
        sys.exit(1)


class LazyBar:
    """A ``progress(done, total)`` callback that opens a progress bar on its first call."""

    def __init__(self, desc: str):
        self.desc, self.bar = desc, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = progress_bar(total, self.desc)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
