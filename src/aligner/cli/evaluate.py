"""`aligner evaluate`: boundary accuracy of alignments against references."""

from __future__ import annotations

import json
import sys

import click

from aligner.cli.common import echo, run


@click.command("evaluate")
@click.argument("ref", type=click.Path(exists=True, file_okay=False))
@click.argument("hyp", type=click.Path(exists=True, file_okay=False))
@click.option("--tier", type=click.Choice(["auto", "phones", "words"]), default="auto", show_default=True,
              help="What to score: phones (same phone sequences, every boundary) or words (FA-Bench's word "
                   "track, phones paired by label); auto: words when HYP's TextGrids have a words tier.")
@click.option("--allow-missing", is_flag=True, help="References without a hypothesis are not an error.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate(ref, hyp, tier, allow_missing, as_json):
    """Score the alignments in HYP against the references in REF, matched by relative path.

    Phones: REF and HYP are directories of TextGrids or TIMIT .phn files with the same phone
    sequences; every boundary but the first phone's start counts: % within 10/20/30/40 ms,
    tau-insensitive loss (tau = 10 ms, in frames), mean and median absolute error.

    Words: HYP's words tiers against REF's TIMIT .wrd files or TextGrid words tiers: words paired
    by a monotonic alignment of their labels, both edges of every paired word scored (mean,
    median, % within 10/20/50 ms), boundary F1 at 20 ms; phones likewise against .phn (rewritten
    as an ARPAbet dictionary writes them) or phones tiers, with substitution/deletion/insertion
    rates.
    """
    from aligner import api

    words = tier == "words" or (tier == "auto" and api.hyp_has_words(hyp))
    if words:
        result = run(api.evaluate_words, ref, hyp, allow_missing)
        problems = result.problems
        if as_json:
            echo(json.dumps({"words": result.words.to_dict(),
                                   "phones": result.phones.to_dict() if result.phones else None,
                                   "problems": len(problems)}))
        else:
            echo("words:\n" + result.words.format())
            if result.phones is not None:
                echo("\nphones:\n" + result.phones.format())
    else:
        scores, problems = run(api.evaluate, ref, hyp, allow_missing)
        if as_json:
            echo(json.dumps(dict(scores.to_dict(), problems=len(problems))))
        else:
            echo(scores.format())
    for path, message in problems:
        echo(f"warning: {path}: {message}", err=True)
    if problems:
        sys.exit(1)
