"""`aligner adapt`: the alignment model re-estimated on the user's own corpus."""

from __future__ import annotations

import click

from aligner.cli.common import echo, exit_if_failed, progress_bar, run


class _StageBars:
    """A ``progress(stage, done, total)`` callback: one progress bar per stage (reading, each round)."""

    def __init__(self):
        self.stage, self.bar = None, None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage, self.bar = stage, progress_bar(total, stage)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@click.command("adapt")
@click.argument("corpus_dir", type=click.Path(file_okay=False))
@click.argument("model_out", type=click.Path(file_okay=False))
@click.option("--model", type=click.Path(file_okay=False),
              help="Base model directory [the shipped English model; for --phone-set ipa/xsampa or --language the "
                   "shipped universal model].")
@click.option("--transcript", "kind", type=click.Choice(["auto", "words", "phones"]), default="auto",
              show_default=True,
              help="Kind of transcript: words (orthographic, looked up in the dictionary) or phones (times in a "
                   ".phn are ignored); auto: .phn files and phone symbols are phones, .lab/.txt/.TextGrid text "
                   "is words.")
@click.option("--dictionary", type=click.Path(dir_okay=False, exists=True),
              help="Pronouncing dictionary in MFA format, added to the CMU Pronouncing Dictionary (for a base "
                   "model trained on its own phones: the dictionary, in those phones).")
@click.option("--oov", type=click.Choice(["g2p", "error"]), default="g2p", show_default=True,
              help="Words missing from the dictionary: the G2P's 4 best pronunciations, the decoder choosing (reported), or fail the file.")
@click.option("--references", type=click.Path(file_okay=False, exists=True),
              help="Hand-aligned TextGrids (a phones tier) of some files, by relative path or stem: their "
                   "boundaries replace the decoded ones and count more. With --language their phones are the "
                   "language's IPA (as align-corpus --language writes them), read through the same mapping.")
@click.option("--language", metavar="CODE",
              help="The words are in this language: read by the gruut G2P, the shipped universal model (or --model's "
                   "closest phones by features) adapted to them (as `align-corpus --language`); align with the "
                   "adapted model the same way.")
@click.option("--phone-map", type=click.Path(dir_okay=False, exists=True),
              help="With --language: 'LANGUAGE_PHONE MODEL_PHONE' lines overriding the feature mapping.")
@click.option("--phone-set", type=click.Choice(["auto", "ipa", "xsampa"]), default="auto", show_default=True,
              help="ipa or xsampa: phone transcripts (a .lab/.txt of phones or a TextGrid's phones tier; or words "
                   "with an IPA --dictionary) in any phones, the base the shipped universal model (unless --model): "
                   "MODEL_OUT is a model of the language's own phones; align with it with --phone-set ipa.")
@click.option("--rounds", type=click.IntRange(min=1, max=10), default=None,
              help="Align the corpus and re-estimate the model this many times [default: 1 for a corpus of "
                   "words transcripts with the clean model (further rounds drift), else 3].")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Also align the corpus with the adapted model and write the TextGrids here.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (of the local pool, or of a local Dask cluster) for each round and for "
                   "--output-dir.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
              help="local: --jobs worker processes on this machine; dask (pip install \"aligner[dask]\"): the "
                   "rounds and --output-dir as Dask tasks, on a local Dask cluster of --jobs processes, or on "
                   "--scheduler's workers [local; dask with --scheduler].")
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="Run on this running Dask scheduler's workers. They must see the corpus, the model and "
                   "MODEL_OUT's folder at the same paths as here (a shared file system).")
@click.option("--keep-check", type=click.Choice(["off", "own", "base"]), default="off", show_default=True,
              help="Hold back every 5th recording (never adapted on) and keep each round's re-estimated part "
                   "(classifier output layer, durations) only where it raises their mean boundary confidence "
                   "(the base's confidence model; own: each candidate's evidence, base: the base model's). "
                   "Needs a model with a confidence model and at least 10 recordings.")
@click.option("--pronunciation-prior", type=click.FloatRange(min=0, min_open=True), default=None, metavar="ALPHA",
              help="Words: count which pronunciation of each word (dictionary variant, rule variant, dialect form) "
                   "the decoder chooses and save a bonus per alternative, log of its relative frequency with ALPHA "
                   "pseudo-counts each (e.g. 1) [off].")
@click.option("--reestimate", type=click.Choice(["auto", "classifier", "durations", "both"]), default="auto",
              show_default=True,
              help="What each round re-estimates: the classifier's output layer, the phone durations or both. "
                   "auto: the classifier for phone transcripts and for a condition expert; the durations for "
                   "words in the clean model's own language (its classifier refit measured worse on clean speech; "
                   "words of another --language: both); both for the universal model. 'both' suits words recorded "
                   "in noise or a room that the model's gates still take for clean.")
def adapt(corpus_dir, model_out, model, kind, dictionary, oov, references, language, phone_map, phone_set, rounds,
          output_dir, jobs, engine, scheduler, keep_check, pronunciation_prior, reestimate):
    """Adapt the alignment model to the recordings of CORPUS_DIR and save it to MODEL_OUT.

    CORPUS_DIR is any corpus align-corpus reads (Montreal Forced Aligner's layout with .lab,
    .txt or TextGrid words, or phone transcripts; one folder per speaker). Each round aligns
    the corpus with the current model and re-estimates the model on those alignments, pulled
    toward the base model so that a small corpus cannot wreck it; boundaries of low confidence
    and files whose transcript does not match are left out. MODEL_OUT is a model bundle like
    the shipped one (it records its base and the corpus): use it with --model in align,
    align-corpus and vowels. It is written when every round is done, never half.

    A base model trained on its own phones (aligner train on TextGrids) is adapted on phone
    transcripts in its symbols, or words with a --dictionary in its phones; --references are
    in its symbols too, and MODEL_OUT keeps its phones. With --language CODE the words are in
    a language the model never heard, read as align-corpus --language reads them; align with
    MODEL_OUT through the same --language (and --phone-map).

    Each round's recordings are aligned on --jobs worker processes, or as Dask tasks with
    --scheduler tcp://HOST:PORT (or --engine dask for a local Dask cluster), as align-corpus
    runs its files; the model is the same (to rounding) however the work is shared. Dask workers
    read the corpus and each round's model (written beside MODEL_OUT) themselves, so they must
    share this file system. A recording that fails on a worker, or whose worker dies, is left
    out of that round and listed; the round goes on.
    """
    from aligner import api

    bars = _StageBars()
    report = run(api.adapt, corpus_dir, model_out, model, dictionary, oov, references, rounds, kind, output_dir,
                 jobs, progress=bars, message=lambda text: (bars.close(), echo(text, err=True)), engine=engine,
                 scheduler=scheduler, language=language, phone_map=phone_map, phone_set=phone_set,
                 keep_check=None if keep_check == "off" else keep_check, pronunciation_prior=pronunciation_prior,
                 reestimate=reestimate)
    bars.close()
    if report.phone_map:
        echo(f"{language} phones aligned as model phones: "
             + ", ".join(f"{p} -> {m}" for p, m in sorted(report.phone_map.items())), err=True)
    if report.oovs:
        echo(f"{len(report.oovs)} words not in the dictionary (pronunciation used):", err=True)
        for word, pronunciation in sorted(report.oovs.items()):
            echo(f"  {word}\t{pronunciation}", err=True)
    last = report.rounds[-1]
    if last.files_left_out:
        echo(f"{len(last.files_left_out)} recordings left out of the last round:", err=True)
        for name, why in sorted(last.files_left_out.items()):
            echo(f"  {name}: {why}", err=True)
    def n(count, word):
        return f"{count} {word}{'' if count == 1 else 's'}"

    echo(f"adapted on {n(report.recordings, 'recording')} of {n(report.speakers, 'speaker')} "
         f"({report.audio_seconds:.1f} s, {report.references} with reference alignments"
         f"{f', {report.edges_cut} cut to their speech (long silent edges)' if report.edges_cut else ''}), "
         f"{n(len(report.rounds), 'round')} in {report.seconds:.1f} s; wrote {report.model_dir}")
    if report.alignment is not None:
        a = report.alignment
        echo(f"aligned {len(a.written)} files with the adapted model into {output_dir}")
        report.failed += list(a.failed)
    exit_if_failed(report.failed, "files failed")
