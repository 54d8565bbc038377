"""`aligner evaluate`: boundary accuracy of alignments against references."""

from __future__ import annotations

import json
import sys

import click

from aligner.cli.common import run


@click.command("evaluate")
@click.argument("ref", type=click.Path(exists=True, file_okay=False))
@click.argument("hyp", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate(ref, hyp, as_json):
    """Score the alignments in HYP against the references in REF.

    REF and HYP are directories of TextGrids or TIMIT .phn files, matched by relative path.
    Every boundary but the first phone's start counts: % within 10/20/30/40 ms,
    tau-insensitive loss (tau = 10 ms, in frames), mean and median absolute error.
    """
    from aligner import api

    scores, problems = run(api.evaluate, ref, hyp)
    for path, message in problems:
        click.echo(f"warning: {path}: {message}", err=True)
    if as_json:
        click.echo(json.dumps(dict(scores.to_dict(), problems=len(problems))))
    else:
        click.echo(scores.format())
    if problems:
        sys.exit(1)
