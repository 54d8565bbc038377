"""`aligner align-corpus`: every recording of a corpus folder, in parallel."""

from __future__ import annotations

import click

from aligner.cli.common import LazyBar, exit_if_failed, fail, run


@click.command("align-corpus")
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

    progress = LazyBar("aligning")
    report = run(api.align_corpus, corpus_dir, out_dir, model, jobs, progress)
    progress.close()
    click.echo(f"aligned {len(report.written)} files ({report.audio_seconds:.1f} s of audio) in "
               f"{report.seconds:.2f} s: {report.realtime_factor:.0f}x real time "
               f"(start-up {report.startup_seconds:.2f} s)")
    if report.skipped:
        click.echo(f"skipped {len(report.skipped)} audio files with no .phn beside them", err=True)
    exit_if_failed(report.failed, "files failed")
    if not report.written:
        fail(f"{corpus_dir}: no audio file with a .phn transcript beside it")
