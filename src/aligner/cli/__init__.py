"""Command line: parses arguments, calls :mod:`aligner.api`, prints. Nothing else lives here.

One module per command; each imports the API only when it runs, so ``aligner --help`` stays fast.
"""

from __future__ import annotations

import click

from aligner import __version__
from aligner.cli.align import align
from aligner.cli.align_corpus import align_corpus
from aligner.cli.evaluate import evaluate
from aligner.cli.oovs import oovs
from aligner.cli.plot import plot
from aligner.cli.train import train
from aligner.cli.train_vowels import train_vowels
from aligner.cli.vowels import vowels


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aligner")
def main():
    """aligner: phoneme forced alignment and vowel duration measurement.

    Without --model, commands use the shipped model trained on the TIMIT sample.
    """
    from aligner.batch import terminate_like_interrupt

    terminate_like_interrupt()  # SIGTERM stops a batch as Ctrl-C does: workers shut down


for _command in (align, align_corpus, oovs, evaluate, train, train_vowels, vowels, plot):
    main.add_command(_command)


if __name__ == "__main__":
    main()
