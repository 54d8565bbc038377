"""`aligner align`: one recording and its transcript (words or phones) to a TextGrid, JSON or CSV."""

from __future__ import annotations

import click

from aligner.cli.common import echo, run
from aligner.cli.options import dialect_option, phone_options, transcript_options


@click.command("align")
@click.argument("audio", type=click.Path(dir_okay=False))
@click.argument("transcript")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="File to write [AUDIO with .TextGrid, .json or .csv].")
@click.option("--model", type=click.Path(file_okay=False),
              help="Model directory [the shipped English model; for --phone-set ipa/xsampa or --language the "
                   "shipped universal model].")
@click.option("--confidence-tier", is_flag=True,
              help="TextGrid: add a point tier per tier with each boundary's confidence (CSV and JSON "
                   "always carry it).")
@click.option("--language", metavar="CODE",
              help="The words are in this language (es, de, fr, ...): each is read by the gruut G2P "
                   "(pip install \"aligner[languages]\" gruut-lang-CODE), its IPA phones aligned by the shipped universal "
                   "model (with --model an English or own-phone model: as its closest phones by phonological "
                   "features, printed), and written in the language's IPA.")
@click.option("--phone-map", type=click.Path(dir_okay=False, exists=True),
              help="With --language: a file of 'LANGUAGE_PHONE MODEL_PHONE' lines overriding the feature mapping.")
@transcript_options
@dialect_option
@phone_options
def align(audio, transcript, output, model, confidence_tier, language, phone_map, kind, fmt, dictionary, oov,
          dialect, phone_set, split_stops):
    """Align AUDIO to TRANSCRIPT and write its words and phones tiers (a phones tier alone for a
    phone transcript).

    AUDIO: WAV, FLAC, OGG, MP3 or NIST SPHERE, any sample rate, mono or stereo.
    TRANSCRIPT: the words, as a .lab or .txt file, a TextGrid whose intervals hold utterance
    transcripts (one tier per speaker), or a quoted string ("She had your dark suit");
    or the phones, as a TIMIT .phn file, a file of symbols, or a quoted string
    ("sil HH AH0 L OW1 sil").

    Each boundary gets a confidence: the probability that it lies within 20 ms of where an
    annotator would put it (CSV column Confidence, JSON fourth element, TextGrid point tiers
    with --confidence-tier). A transcript that probably does not belong to the audio is
    reported on stderr.
    """
    from aligner import api

    out, result = run(api.align_file_reviewed, audio, transcript, output, model, phone_set, split_stops, kind,
                      fmt, dictionary, oov, confidence_tier, language=language, phone_map=phone_map,
                      dialect=dialect)
    if result.phone_map:
        echo(f"{language} phones aligned as model phones: "
             + ", ".join(f"{p} -> {m}" for p, m in sorted(result.phone_map.items())), err=True)
    for word, pronunciation in sorted(result.oovs.items()):
        echo(f"not in the dictionary: {word} (aligned as {pronunciation})", err=True)
    if result.transcript_flagged:
        echo(f"warning: {transcript}: the transcript probably does not match {audio} (match probability "
             f"{result.transcript_match:.2f}); check the alignment", err=True)
    n, n_low, _ = result.review()
    if n_low:
        echo(f"{n_low} of {n} boundaries have confidence below 0.5", err=True)
    echo(str(out))
