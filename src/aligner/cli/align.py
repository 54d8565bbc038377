"""`aligner align`: one recording and its transcript (words or phones) to a TextGrid, JSON or CSV."""

from __future__ import annotations

import click

from aligner.cli.common import echo, run
from aligner.cli.options import phone_options, transcript_options


@click.command("align")
@click.argument("audio", type=click.Path(dir_okay=False))
@click.argument("transcript")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="File to write [AUDIO with .TextGrid, .json or .csv].")
@click.option("--model", type=click.Path(file_okay=False), help="Model directory [the shipped model].")
@transcript_options
@phone_options
def align(audio, transcript, output, model, kind, fmt, dictionary, oov, phone_set, split_stops):
    """Align AUDIO to TRANSCRIPT and write its words and phones tiers (a phones tier alone for a
    phone transcript).

    AUDIO: WAV, FLAC, OGG, MP3 or NIST SPHERE, any sample rate, mono or stereo.
    TRANSCRIPT: the words, as a .lab or .txt file, a TextGrid whose intervals hold utterance
    transcripts (one tier per speaker), or a quoted string ("She had your dark suit");
    or the phones, as a TIMIT .phn file, a file of symbols, or a quoted string
    ("sil HH AH0 L OW1 sil").
    """
    from aligner import api

    oovs: dict = {}
    out = run(api.align_file, audio, transcript, output, model, phone_set, split_stops, kind, fmt,
              dictionary, oov, oovs)
    for word, pronunciation in sorted(oovs.items()):
        echo(f"not in the dictionary: {word} (aligned as {pronunciation})", err=True)
    echo(str(out))
