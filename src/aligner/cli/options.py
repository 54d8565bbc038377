"""Options several commands share (transcript kind, output format, dictionary, unknown words;
where a batch runs)."""

from __future__ import annotations

import click

PHONE_SETS = click.Choice(["auto", "timit61", "timit39", "arpabet", "ipa", "xsampa"])
#: what --phone-set says, shared by the commands that take it
PHONE_SET_HELP = ("Symbols of a phone transcript: TIMIT-61, the 39 Lee & Hon classes, ARPAbet (stress digits ignored); "
                  "or any phone in IPA or X-SAMPA (diacritics, length, tie bars and tone read as features; a quoted "
                  "string, a .lab/.txt of phones or a TextGrid's phones tier; with --dictionary, an IPA pronouncing "
                  "dictionary in MFA's format): aligned by the shipped universal model unless --model names another, "
                  "a silence added at either end where the transcript has none.")


def transcript_options(command):
    """``--transcript``, ``--format``, ``--dictionary``, ``--oov``."""
    options = [
        click.option("--transcript", "kind", type=click.Choice(["auto", "words", "phones"]), default="auto",
                     show_default=True,
                     help="Kind of transcript: words (orthographic, looked up in the dictionary) or phones; "
                          "auto: .phn files and phone symbols are phones, .lab/.txt/.TextGrid text is words."),
        click.option("--format", "fmt", type=click.Choice(["textgrid", "json", "csv"]), default="textgrid",
                     show_default=True, help="Output format (Montreal Forced Aligner's JSON and CSV layouts)."),
        click.option("--dictionary", type=click.Path(dir_okay=False, exists=True),
                     help="Pronouncing dictionary in MFA format (WORD PHONE PHONE ..., a line per variant), "
                          "added to the CMU Pronouncing Dictionary; its entries replace CMU's."),
        click.option("--oov", type=click.Choice(["g2p", "error"]), default="g2p", show_default=True,
                     help="Words missing from the dictionary: the G2P's 4 best pronunciations, the decoder choosing (reported), or fail."),
    ]
    return _apply(command, options)


def dialect_option(command):
    """``--dialect``: the English pronunciations a words transcript is aligned with."""
    from aligner.words.dialects import DEFAULT_DIALECT, DIALECTS

    options = [
        click.option("--dialect", type=click.Choice(list(DIALECTS)), default=DEFAULT_DIALECT, show_default=True,
                     help="English words: rhotic aligns the dictionary's (American, r-coloured) pronunciations; "
                          "non-rhotic their r-less forms (offer AO1 F AH0, north N AO1 TH; a word-final r kept "
                          "before a vowel: RP, Australian...); auto offers both and picks per word by the audio."),
    ]
    return _apply(command, options)


def cluster_options(command):
    """``--engine``, ``--scheduler``, ``--resume``: where a batch command's files are worked on."""
    options = [
        click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
                     help="local: --jobs worker processes on this machine; dask (pip install \"aligner[dask]\"): "
                          "one Dask task per file, on a local Dask cluster of --jobs processes, or on "
                          "--scheduler's workers [local; dask with --scheduler]."),
        click.option("--scheduler", metavar="tcp://HOST:PORT",
                     help="Run on this running Dask scheduler's workers. They must see the inputs, the model "
                          "and the output at the same paths as here (a shared file system)."),
        click.option("--resume", is_flag=True,
                     help="Skip files whose output is already complete (there, non-empty, no older than its "
                          "audio, transcript and --dictionary); align-corpus only."),
    ]
    return _apply(command, options)


def phone_options(command):
    """``--phone-set``, ``--split-stops``: how `aligner align` reads one phone transcript."""
    options = [
        click.option("--phone-set", type=PHONE_SETS, default="auto", show_default=True, help=PHONE_SET_HELP),
        click.option("--split-stops/--no-split-stops", default=None,
                     help="Decode each stop/affricate of a phone transcript as TIMIT closure + release, merged "
                          "back into its symbol [automatic: for ARPAbet and timit39, not TIMIT-61]."),
    ]
    return _apply(command, options)


def _apply(command, options: list):
    for option in reversed(options):
        command = option(command)
    return command
