"""Command line: parses arguments, calls :mod:`aligner.api`, prints. Nothing else lives here."""

from __future__ import annotations

import json
import sys

import click

from aligner import __version__


def _fail(message: str, code: int = 1):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _run(fn, *args, **kwargs):
    """Call the API; bad input becomes a one-line error and exit status 1."""
    from aligner.errors import AlignerError

    try:
        return fn(*args, **kwargs)
    except AlignerError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))


def _progress_bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="file", file=sys.stderr, disable=None, dynamic_ncols=True)


def _exit_if_failed(failed: list, what: str) -> None:
    """List ``failed`` ``(item, message)`` pairs on stderr under ``N <what>:`` and exit 1."""
    if failed:
        click.echo(f"{len(failed)} {what}:", err=True)
        for _, message in failed:
            click.echo(f"  {message}", err=True)
        sys.exit(1)


class _LazyBar:
    """A ``progress(done, total)`` callback that opens a progress bar on its first call."""

    def __init__(self, desc: str):
        self.desc, self.bar = desc, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = _progress_bar(total, self.desc)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aligner")
def main():
    """aligner: phoneme forced alignment and vowel duration measurement.

    Without --model, commands use the shipped model trained on the TIMIT sample.
    """


PHONE_SETS = click.Choice(["auto", "timit61", "timit39", "arpabet"])


@main.command()
@click.argument("audio", type=click.Path(dir_okay=False))
@click.argument("phones")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="TextGrid to write [AUDIO with .TextGrid].")
@click.option("--model", type=click.Path(file_okay=False), help="Model directory [the shipped model].")
@click.option("--phone-set", type=PHONE_SETS, default="auto", show_default=True,
              help="Symbols of PHONES: TIMIT-61, the 39 Lee & Hon classes, or ARPAbet (stress digits ignored).")
@click.option("--split-stops/--no-split-stops", default=None,
              help="Decode each stop/affricate as TIMIT closure + release, merged back into its symbol "
                   "[automatic: for ARPAbet and timit39, not TIMIT-61].")
def align(audio, phones, output, model, phone_set, split_stops):
    """Align AUDIO to PHONES and write a Praat TextGrid with a tier `phones`.

    AUDIO: WAV, FLAC, OGG or NIST SPHERE, any sample rate, mono or stereo.
    PHONES: a TIMIT .phn file, a file of whitespace-separated symbols, or the symbols
    as one quoted string, e.g. "sil HH AH0 L OW1 sil".
    """
    from aligner import api

    out = _run(api.align_file, audio, phones, output, model, phone_set, split_stops)
    click.echo(str(out))


@main.command("align-corpus")
@click.argument("corpus_dir", type=click.Path(file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option("--model", type=click.Path(file_okay=False), help="Model directory [the shipped model].")
def align_corpus(corpus_dir, out_dir, jobs, model):
    """Align every audio file under CORPUS_DIR that has a .phn beside it.

    Writes OUT_DIR/<relative path>.TextGrid. Bad files are reported at the end and make the
    exit status non-zero; the others are still aligned.
    """
    from aligner import api

    progress = _LazyBar("aligning")
    report = _run(api.align_corpus, corpus_dir, out_dir, model, jobs, progress)
    progress.close()
    click.echo(f"aligned {len(report.written)} files ({report.audio_seconds:.1f} s of audio) in "
               f"{report.seconds:.2f} s: {report.realtime_factor:.0f}x real time "
               f"(start-up {report.startup_seconds:.2f} s)")
    if report.skipped:
        click.echo(f"skipped {len(report.skipped)} audio files with no .phn beside them", err=True)
    _exit_if_failed(report.failed, "files failed")
    if not report.written:
        _fail(f"{corpus_dir}: no audio file with a .phn transcript beside it")


@main.command()
@click.argument("ref", type=click.Path(exists=True, file_okay=False))
@click.argument("hyp", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate(ref, hyp, as_json):
    """Score the alignments in HYP against the references in REF.

    REF and HYP are directories of TextGrids or TIMIT .phn files, matched by relative path.
    Every boundary but the first phone's start counts: % within 10/20/30/40 ms,
    tau-insensitive loss (tau = 10 ms, in frames), mean and median absolute error.
    """
    from aligner import api

    scores, problems = _run(api.evaluate, ref, hyp)
    for path, message in problems:
        click.echo(f"warning: {path}: {message}", err=True)
    if as_json:
        click.echo(json.dumps(dict(scores.to_dict(), problems=len(problems))))
    else:
        click.echo(scores.format())
    if problems:
        sys.exit(1)


@main.command()
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--trainer", type=click.Choice(["perceptron", "svm", "ramp", "direct_toward", "direct_away",
                                              "probit", "orbit"]), default="orbit", show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--eta0", type=float, default=None,
              help="Step size (constant, averaged) [0.01].")
@click.option("--lam", type=float, default=None, help="L2 regularisation [trainer's default].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=4, show_default=True,
              help="Speaker folds for the out-of-fold classifier scores.")
def train(corpus_dir, out_dir, trainer, epochs, eta0, lam, seed, folds):
    """Train an alignment model on CORPUS_DIR (TIMIT layout: audio + .phn) into OUT_DIR."""
    from aligner import api

    params = {"epochs": epochs, "seed": seed}
    if eta0 is not None:
        params["eta0"] = eta0
    if lam is not None:
        params["lam"] = lam

    def progress(stage, done, total):
        click.echo(f"\r{stage}: {done}/{total}", err=True, nl=(done == total))

    def epoch(record):
        click.echo(f"epoch {record.epoch}: train cost {record.train_cost:.4f}, "
                   f"validation cost {record.val_cost:.4f}, {record.seconds:.1f} s", err=True)

    model = _run(api.train, corpus_dir, out_dir, trainer, params, None, folds, 2, progress, epoch)
    click.echo(f"wrote {out_dir} (weights {', '.join(f'{v:.3g}' for v in model.weights)})")


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="CSV to write: file,onset_s,offset_s,duration_s,score (+ label,window_start_s,window_end_s with --tier).")
@click.option("--textgrid-dir", type=click.Path(file_okay=False),
              help="Also write one TextGrid per file here, with an interval tier `vowel`.")
@click.option("--model", type=click.Path(file_okay=False), help="Vowel model directory [the shipped model].")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option("--tier", help="Measure one vowel per non-empty interval of this tier of the TextGrid beside each file.")
@click.option("--pad", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="With --tier: widen each interval by this many seconds on both sides.")
def vowels(inputs, output, textgrid_dir, model, jobs, tier, pad):
    """Measure vowel onsets, offsets and durations in CVC recordings; no transcript needed.

    INPUTS are audio files or directories (searched recursively). Each file is taken as one CVC
    recording (the vowel is searched in the whole file) unless --tier names a tier of the
    TextGrid beside it. Bad files are reported at the end and make the exit status non-zero;
    the others are still measured.
    """
    from aligner import api
    from aligner.io.textgrids import atomic_write_text

    progress = _LazyBar("measuring")
    report = _run(api.measure_vowels, list(inputs), model, tier, pad, jobs, textgrid_dir, progress)
    progress.close()
    _run(atomic_write_text, output, api.vowels_csv(report.records, with_windows=tier is not None))
    click.echo(f"measured {len(report.records)} vowels in {report.n_files} files in {report.seconds:.2f} s: "
               f"{report.tokens_per_second:.0f} per second (start-up {report.startup_seconds:.2f} s); wrote {output}")
    _exit_if_failed(report.failed, "failed")
    if not report.records:
        _fail("no vowel measured")


if __name__ == "__main__":
    main()
