"""Command line: parses arguments, calls :mod:`aligner.api`, prints. Nothing else lives here.

One module per command, imported when its command runs (:data:`COMMANDS`); each imports the API
only when it runs, so ``aligner --help`` stays fast.

Start-up (issue 15). Users script ``aligner align`` once per file, so a process's fixed costs
are the whole cost. When the command line runs as a program (the ``aligner`` console script
calls ``main()``: :meth:`AlignerGroup.__call__`), and not when a test calls it through click's
``CliRunner`` (:meth:`click.Command.main`), it

- skips the interpreter's teardown: after the command it flushes stdout and stderr, waits for
  non-daemon threads and runs the ``atexit`` handlers as a normal exit does, then ends with
  ``os._exit(status)``. Freeing every module's objects one by one (garbage collection of
  ~120 000 objects, numba's and LLVM's finalizers) took about 0.5 s of every short command and
  did nothing the operating system does not do anyway;
- trims numba's first-use initialisation (:func:`_lighten_numba_start_up`);
- runs BLAS on one thread in the commands that align or measure (:data:`ONE_BLAS_THREAD`):
  their matrix products are small, and OpenBLAS's second thread spun beside the work instead
  of helping (``aligner vowels`` on one cut: 1.2 s -> 0.8 s of wall time on a busy 2-core
  machine; worker processes of ``--jobs N`` were already limited to one thread each).
  Training keeps BLAS's threads. The same commands keep the top of their heap
  (:func:`~aligner.runtime.heap.keep_heap_top`; forked workers inherit it), so the arrays each
  recording allocates and frees do not fault fresh pages in every time;
- runs ``aligner align`` (one recording) without the cyclic garbage collector
  (:data:`NO_GC`): its passes over the ~120 000 objects that importing numpy, numba and the
  model creates cost about 50 ms (8 % of the command) and free next to nothing; one alignment's
  garbage is bounded, and the process ends right after. Commands that go through many files
  keep the collector.
"""

from __future__ import annotations

import os
import sys

import click

from aligner import __version__
from aligner.runtime.heap import keep_heap_top

#: each command's module of :mod:`aligner.cli` and its function there, imported when the command
#: runs or its help is shown (``aligner align`` of one file loads no other command's module)
COMMANDS = {"align": "align", "align-corpus": "align_corpus", "adapt": "adapt", "evaluate": "evaluate",
            "oovs": "oovs", "plot": "plot", "train": "train", "train-vowels": "train_vowels", "vowels": "vowels"}


def _lighten_numba_start_up() -> None:
    """Make numba's first use (its CPU target's registries, loaded before any cached
    function can run) cheaper in a command-line process, without changing what it computes:

    - numba's ``numba.np.arraymath`` checks that a BLAS is there by importing
      ``scipy.linalg.cython_blas``, which runs all of ``scipy.linalg``'s ``__init__`` (about
      150 ms; nothing on the align or vowels path uses scipy.linalg). The ``cython_blas``
      extension module, the very one ``scipy.linalg`` would load, is loaded on its own first,
      under its own name, so the check finds it; a later ``import scipy.linalg`` still works
      (it imports its package as usual; only the attribute ``scipy.linalg.cython_blas`` is not
      set, ``from scipy.linalg import cython_blas`` and ``import scipy.linalg.cython_blas`` are).
    - numba's CFFI support builds a ``cffi.FFI()`` (pycparser, about 60 ms) when the ``cffi``
      package is importable. No aligner function takes CFFI objects, and soundfile uses
      ``_cffi_backend`` only, so the process runs as without the ``cffi`` package
      (``sys.modules["cffi"] = None``: importing it raises ImportError, which numba and scipy
      handle as "not installed").

    Does nothing once numba's target is loaded or scipy.linalg imported; any failure leaves
    numba to do its usual work."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    if "cffi" not in sys.modules:
        sys.modules["cffi"] = None  # type: ignore[assignment]
    name = "scipy.linalg.cython_blas"
    if name in sys.modules:
        return
    try:
        import importlib.machinery
        import importlib.util

        scipy_spec = importlib.util.find_spec("scipy")  # finds scipy without importing it
        if scipy_spec is None or not scipy_spec.submodule_search_locations:
            return
        linalg = os.path.join(list(scipy_spec.submodule_search_locations)[0], "linalg")
        finder = importlib.machinery.FileFinder(
            linalg, (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
        spec = finder.find_spec(name)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    except Exception:
        return


#: commands run with one BLAS thread (the others, training, keep BLAS's default)
ONE_BLAS_THREAD = frozenset({"align", "align-corpus", "adapt", "vowels", "evaluate", "oovs", "plot"})
#: commands run without the cyclic garbage collector (one file each: bounded garbage)
NO_GC = frozenset({"align"})
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    """One BLAS thread for this process (and the workers it starts), set the cheapest way: in
    the environment, read when numpy loads its BLAS, so nothing is done if numpy is already
    loaded or the user set a thread count."""
    if "numpy" in sys.modules or any(v in os.environ for v in _BLAS_THREAD_VARIABLES):
        return
    for variable in _BLAS_THREAD_VARIABLES:
        os.environ[variable] = "1"


def _exit_status(code) -> int:
    """The process exit status of ``SystemExit(code)``, printing a message as Python does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # as the operating system reports it (sys.exit(-1): 255)
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _fast_exit(status: int) -> None:
    """End the process as a normal exit would (flushed streams, non-daemon threads joined,
    ``atexit`` handlers run) but without the interpreter's teardown: ``os._exit(status)``."""
    import atexit
    import threading

    try:
        threading._shutdown()  # what Py_Finalize does first: join non-daemon threads
    except Exception:
        pass
    try:
        atexit._run_exitfuncs()
    except Exception:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            if status == 0:
                status = 120  # what Python exits with when flushing stdout fails at exit
    os._exit(status)


class AlignerGroup(click.Group):
    """The ``aligner`` group; run as a program (``__call__``) it starts and ends fast (module
    docstring). ``main()``, which ``CliRunner`` and other callers use, behaves as click's."""

    as_program = False  #: set by __call__: lighten numba's start-up before a command runs

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None and name in COMMANDS:  # imported on first use (:data:`COMMANDS`)
            import importlib

            module = COMMANDS[name]
            command = getattr(importlib.import_module(f"aligner.cli.{module}"), module)
            self.add_command(command, name)
        return command

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if self.as_program and command is not None:  # a command is about to run
            if command.name in ONE_BLAS_THREAD:
                _one_blas_thread()  # before numpy loads
                keep_heap_top()  # recordings' arrays come and go: no page faults for each (forks inherit it)
            if command.name in NO_GC:
                import gc

                gc.disable()
            _lighten_numba_start_up()
        return name, command, rest

    def __call__(self, *args, **kwargs):
        self.as_program = True
        try:
            self.main(*args, **kwargs)  # standalone: always ends in SystemExit
            status = 0
        except SystemExit as exc:
            status = _exit_status(exc.code)
        _fast_exit(status)


@click.group(cls=AlignerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aligner")
def main():
    """aligner: phoneme forced alignment and vowel duration measurement.

    Without --model, commands use the shipped model trained on the TIMIT sample.
    """
    from aligner.runtime.batch import terminate_like_interrupt
    from aligner.cli.common import warnings_as_lines

    terminate_like_interrupt()  # SIGTERM stops a batch as Ctrl-C does: workers shut down
    warnings_as_lines()  # "warning: FILE: what happened", one line (worker processes inherit it)



if __name__ == "__main__":
    main()
