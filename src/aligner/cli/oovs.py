"""`aligner oovs`: the words of a corpus that the dictionary lacks, without aligning."""

from __future__ import annotations

import click

from aligner.cli.common import echo, exit_if_failed, run


@click.command("oovs")
@click.argument("corpus_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--dictionary", type=click.Path(dir_okay=False, exists=True),
              help="Pronouncing dictionary in MFA format, added to the CMU Pronouncing Dictionary.")
@click.option("--g2p/--no-g2p", default=True, show_default=True,
              help="Also print the pronunciation the aligner would use for each word.")
def oovs(corpus_dir, dictionary, g2p):
    """List the words of CORPUS_DIR's transcripts (.lab, .txt, .TextGrid) missing from the
    dictionary, most frequent first: WORD, occurrences and (with --g2p) the guessed
    pronunciation, tab-separated; a dictionary file in MFA format once the third column is
    checked. Like Montreal Forced Aligner's find_oovs."""
    from aligner import api

    report = run(api.find_oovs, corpus_dir, dictionary, g2p)
    echo(f"{len(report.oovs)} unknown words in {report.n_transcripts} transcripts", err=True)
    for word, (count, pronunciation) in report.oovs.items():
        echo(f"{word}\t{count}\t{pronunciation}" if g2p else f"{word}\t{count}")
    exit_if_failed(report.failed, "transcripts could not be read")
