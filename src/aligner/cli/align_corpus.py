"""`aligner align-corpus`: every recording of a corpus folder, in parallel."""

from __future__ import annotations

import click

from aligner.cli.common import LazyBar, echo, exit_if_failed, fail, run
from aligner.cli.options import PHONE_SET_HELP, PHONE_SETS, cluster_options, dialect_option, transcript_options


@click.command("align-corpus")
@click.argument("corpus_dir", type=click.Path(file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (of the local pool, or of a local Dask cluster).")
@click.option("--model", type=click.Path(file_okay=False),
              help="Model directory [the shipped English model; for --phone-set ipa/xsampa or --language the "
                   "shipped universal model].")
@click.option("--plot-dir", type=click.Path(file_okay=False),
              help="Also draw each alignment's review picture (waveform, spectrogram, tiers, boundaries "
                   "coloured by confidence) to PLOT_DIR/<relative path>.png; pip install \"aligner[plot]\".")
@click.option("--confidence-tier", is_flag=True,
              help="TextGrids: add a point tier per tier with each boundary's confidence (CSV and JSON "
                   "always carry it).")
@click.option("--language", metavar="CODE",
              help="The words are in this language: read by the gruut G2P and aligned by the shipped universal "
                   "model, or as --model's closest phones by features (as `aligner align --language`).")
@click.option("--phone-map", type=click.Path(dir_okay=False, exists=True),
              help="With --language: 'LANGUAGE_PHONE MODEL_PHONE' lines overriding the feature mapping.")
@click.option("--phone-set", type=PHONE_SETS, default="auto", show_default=True, help=PHONE_SET_HELP)
@transcript_options
@dialect_option
@cluster_options
def align_corpus(corpus_dir, out_dir, jobs, model, plot_dir, confidence_tier, language, phone_map, phone_set, kind,
                 fmt, dictionary, oov, dialect, engine, scheduler, resume):
    """Align every audio file under CORPUS_DIR that has a transcript of the same stem beside it.

    Montreal Forced Aligner's layout (flat or one folder per speaker; .lab, .txt or .TextGrid
    transcripts) and TIMIT's (.phn, taken as the transcript when .txt is there too) are read.
    Writes OUT_DIR/<relative path> with the format's suffix. Bad files are reported at the end
    and make the exit status non-zero; the others are still aligned.

    With --scheduler tcp://HOST:PORT (or --engine dask for a local Dask cluster) each file is a
    Dask task; the workers read the corpus and the model and write OUT_DIR themselves, so they
    must share this file system. A worker that dies mid-file loses nothing: Dask reruns the file
    elsewhere, or it is listed as failed. Outputs are written atomically; --resume keeps those
    of an earlier run that are complete (there, non-empty, no older than their inputs) and
    aligns the rest (a changed model or option is not noticed: use a new OUT_DIR then).

    The summary ends with the files holding the least confident boundaries (confidence: the
    probability that a boundary lies within 20 ms of where an annotator would put it) and the
    files whose transcript probably does not match their audio: where to look first.
    """
    from aligner import api

    progress = LazyBar("aligning")
    report = run(api.align_corpus, corpus_dir, out_dir, model, jobs, progress, kind, fmt, dictionary, oov,
                 engine=engine, scheduler=scheduler, resume=resume, confidence_tiers=confidence_tier,
                 plot_dir=plot_dir, language=language, phone_map=phone_map, phone_set=phone_set,
                 dialect=dialect)
    progress.close()
    if report.resumed:
        echo(f"kept {len(report.resumed)} complete outputs of an earlier run (--resume)")
    echo(f"aligned {len(report.written)} files ({report.audio_seconds:.1f} s of audio) in "
               f"{report.seconds:.2f} s: {report.realtime_factor:.0f}x real time "
               f"(start-up {report.startup_seconds:.2f} s)")
    if report.oovs:
        echo(f"{len(report.oovs)} words not in the dictionary (files, pronunciation used):", err=True)
        for word, (count, pronunciation) in sorted(report.oovs.items()):
            echo(f"  {word}\t{count}\t{pronunciation}", err=True)
    if report.plot_problems:
        echo(f"{len(report.plot_problems)} review pictures were not drawn:", err=True)
        for _, why in report.plot_problems:
            echo(f"  {why}", err=True)
    flagged = report.flagged()
    if flagged:
        echo(f"{len(flagged)} transcripts probably do not match their audio (match probability):", err=True)
        for out, review in flagged:
            echo(f"  {out}\t{review.transcript_match:.2f}", err=True)
    least = report.least_confident()
    if least:
        echo("least confident (boundaries below 0.5 confidence, lowest confidence):")
        for out, review in least:
            echo(f"  {out}\t{review.n_low} of {review.n_boundaries}\t{review.lowest:.2f}")
    if report.skipped:
        echo(f"skipped {len(report.skipped)} audio files with no transcript beside them:", err=True)
        for path in report.skipped:
            echo(f"  {path}", err=True)
    exit_if_failed(report.failed, "files failed")
    if not report.written and not report.resumed:
        fail(f"{corpus_dir}: no audio file with a transcript (.phn, .lab, .txt, .TextGrid) beside it")
