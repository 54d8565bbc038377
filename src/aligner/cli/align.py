"""`aligner align`: one recording and its phone transcript to a TextGrid."""

from __future__ import annotations

import click

from aligner.cli.common import run


PHONE_SETS = click.Choice(["auto", "timit61", "timit39", "arpabet"])


@click.command("align")
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

    out = run(api.align_file, audio, phones, output, model, phone_set, split_stops)
    click.echo(str(out))
