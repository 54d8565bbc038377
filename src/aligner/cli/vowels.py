"""`aligner vowels`: vowel onsets, offsets and durations to a CSV."""

from __future__ import annotations

import click

from aligner.cli.common import LazyBar, echo, exit_if_failed, fail, run
from aligner.cli.options import PHONE_SET_HELP, PHONE_SETS, cluster_options


@click.command("vowels")
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="CSV to write: file,onset_s,offset_s,duration_s,score,flag (+ label,window_start_s,window_end_s "
                   "with --tier) from the vowel model; file,speaker,word,word_start_s,word_end_s,vowel,stress,"
                   "onset_s,offset_s,duration_s,confidence,score,mode,flag when any file is aligned.")
@click.option("--textgrid-dir", type=click.Path(file_okay=False),
              help="Also write one TextGrid per file here, with an interval tier `vowel`.")
@click.option("--model", type=click.Path(file_okay=False), help="Vowel model directory [the shipped model].")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (of the local pool, or of a local Dask cluster).")
@click.option("--mode", type=click.Choice(["auto", "align", "model"]), default="auto", show_default=True,
              help="align: align each file's transcript and report every vowel; model: the transcript-free "
                   "vowel model; auto: align the files that have a transcript (--transcript, or a .phn, "
                   ".lab or .txt beside them), the model for the others.")
@click.option("--transcript", help="With one audio file: its transcript (a file, or the words in quotes).")
@click.option("--words", help="Align mode: keep only the vowels of these words (comma-separated: bad,bag).")
@click.option("--stressed-only", is_flag=True, help="Align mode: keep only vowels with stress 1 or 2.")
@click.option("--dictionary", type=click.Path(dir_okay=False),
              help="Align mode: a pronouncing dictionary (MFA format) on top of the CMU dictionary.")
@click.option("--tier", help="Model mode: measure one vowel per non-empty interval of this tier of the TextGrid "
                             "beside each file. Align mode: the words tier of that TextGrid to align.")
@click.option("--pad", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="With --tier: widen each interval by this many seconds on both sides.")
@click.option("--fuse/--no-fuse", default=True, show_default=True,
              help="Align mode: re-measure each aligned vowel with the vowel model around its aligned interval "
                   "(mode fused); --no-fuse reports the aligned intervals (mode align), 2-3 times faster.")
@click.option("--fusion-model", type=click.Path(file_okay=False),
              help="Align mode: the vowel model that re-measures the aligned vowels [the shipped fusion model, which "
                   "reads the aligner's own frames; with --model, that model].")
@click.option("--alignment-model", type=click.Path(file_okay=False),
              help="Align mode: the alignment model directory (e.g. one made by aligner adapt) [the shipped English "
                   "one; with --phone-set ipa/xsampa the shipped universal one].")
@click.option("--phone-set", type=PHONE_SETS, default="auto", show_default=True,
              help="Align mode: " + PHONE_SET_HELP + " Each phone is a vowel by its features.")
@cluster_options
def vowels(inputs, output, textgrid_dir, model, jobs, mode, transcript, words, stressed_only, dictionary, tier, pad,
           fuse, fusion_model, alignment_model, phone_set, engine, scheduler, resume):
    """Measure vowel onsets, offsets and durations: from a transcript when there is one, with
    the transcript-free vowel model otherwise.

    INPUTS are audio files or directories (searched recursively). A file with a transcript
    (--transcript, or a .phn, .lab or .txt of the same stem beside it) is aligned and every vowel
    of the alignment becomes a row, with its word, stress and confidence (--words and
    --stressed-only keep the target vowels). A file without one is taken as one CVC recording
    (the vowel is searched in the whole file) unless --tier names a tier of the TextGrid beside
    it. Bad files are reported at the end and make the exit status non-zero; the others are
    still measured.

    With --scheduler tcp://HOST:PORT (or --engine dask for a local Dask cluster) each file is a
    Dask task; the workers read the recordings and the model (and write --textgrid-dir)
    themselves, so they must share this file system. The CSV is written here, atomically, once
    every file is done; --resume is refused (align-corpus only).
    """
    from aligner import api
    from aligner.io.atomic import atomic_write_text

    run(api.check_output_not_input, output, *inputs)
    progress = LazyBar("measuring")
    word_list = None if words is None else [w for w in words.split(",") if w.strip()]
    report = run(api.measure_vowels, list(inputs), model, tier, pad, jobs, textgrid_dir, progress,
                 engine=engine, scheduler=scheduler, resume=resume, mode=mode, transcript=transcript,
                 words=word_list, stressed_only=stressed_only, dictionary=dictionary,
                 alignment_model=alignment_model, fuse=fuse, phone_set=phone_set, fusion_model=fusion_model)
    progress.close()
    run(atomic_write_text, output, api.vowels_csv(report.records, with_windows=tier is not None))
    echo(f"measured {len(report.records)} vowels in {report.n_files} files in {report.seconds:.2f} s: "
               f"{report.tokens_per_second:.0f} per second (start-up {report.startup_seconds:.2f} s); wrote {output}")
    exit_if_failed(report.failed, "failed")
    if not report.records:
        fail("no vowel measured")
