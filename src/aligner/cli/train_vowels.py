"""`aligner train-vowels`: a vowel duration model from the CVC tokens of a TIMIT-layout corpus
(parses, calls :func:`aligner.api.train_vowels`, prints; progress on stderr)."""

from __future__ import annotations

import json

import click

from aligner.cli.common import echo, fail, run

TRAINER_NAMES = ("perceptron", "svm", "orbit", "ramp", "direct_toward", "direct_away", "probit")
PRIOR_FORMS = ("off", "full", "lognormal", "gamma")


def _int_list(value: str, what: str) -> tuple:
    try:
        out = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise click.BadParameter(f"{value!r}: expected {what} as comma-separated whole numbers >= 1, e.g. 2,5,10")
    return out


def _parse_trainers(ctx, param, value):
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in TRAINER_NAMES]
    if not names or unknown:
        raise click.BadParameter(f"{value!r}: choose from {', '.join(TRAINER_NAMES)} (comma-separated)")
    return names


def _parse_widths(ctx, param, value):
    return tuple(_int_list(v, "edge widths in 5 ms frames") for v in value) if value else None


def _parse_params(ctx, param, value):
    if value is None:
        return None
    try:
        params = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON ({exc})") from None
    if not isinstance(params, dict):
        raise click.BadParameter('expected a JSON object, e.g. \'{"average": true}\'')
    return params


class _Progress:
    """``progress(stage, done, total)`` on stderr: one line per stage, rewritten in place."""

    def __init__(self):
        self.stage = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.stage is not None and stage != self.stage:
            echo("", err=True)
        self.stage = stage
        echo(f"\r{stage}: {done}/{total}", err=True, nl=False)

    def close(self) -> None:
        if self.stage is not None:
            echo("", err=True)
            self.stage = None


@click.command("train-vowels")
@click.argument("corpus_dir", type=click.Path(file_okay=False))
@click.argument("model_dir", type=click.Path(file_okay=False))
@click.option("--alignment-model", type=click.Path(file_okay=False),
              help="Alignment model whose frame classifier computes the acoustics (copied into the vowel model) "
                   "[the shipped one].")
@click.option("--trainers", default="perceptron,svm,orbit", show_default=True, callback=_parse_trainers,
              help=f"Trainers to choose from on validation, comma-separated ({', '.join(TRAINER_NAMES)}).")
@click.option("--params", callback=_parse_params,
              help="Trainer settings as a JSON object, tried instead of each trainer's grid of settings, "
                   "e.g. '{\"average\": true}'.")
@click.option("--widths", multiple=True, callback=_parse_widths,
              help="An edge-width set to choose from, in 5 ms frames (repeatable) [2,5,10 and 1,2,5,10].")
@click.option("--epochs", type=click.IntRange(min=1), default=15, show_default=True,
              help="Maximum epochs (early-stopped on validation; exact with --folds 0).")
@click.option("--folds", type=click.IntRange(min=0), default=4, show_default=True,
              help="Speaker folds; 0: no cross-validation, one candidate fitted for exactly --epochs epochs.")
@click.option("--tau", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Cost tolerance on onset and offset, in 5 ms frames.")
@click.option("--prior", type=click.Choice(PRIOR_FORMS), default="off", show_default=True,
              help="Form of the duration prior.")
@click.option("--prior-widen", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Multiply the prior's (log) standard deviation by this.")
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Fits per setting over seeds 0..RUNS-1 whose weights are averaged.")
@click.option("--all-columns", is_flag=True, help="Use all 22 acoustic columns instead of the default 16.")
@click.option("--front-end", type=click.Choice(["cuts", "frames"]), default="cuts", show_default=True,
              help="cuts: the vowel model's own acoustics of each cut (measures recordings without a transcript); "
                   "frames: the alignment model's MFCC frames and posteriors with time-domain columns, all 23 "
                   "(for re-measuring aligned vowels, `aligner vowels` with a transcript).")
@click.option("--keep-corrupted", is_flag=True,
              help="Also train on tokens whose audio leaves the SPHERE header's sample range.")
@click.option("--held-out-classifier", is_flag=True,
              help="Score each fold with a frame classifier trained without its test speakers (slow).")
@click.option("--vowel-tier", metavar="NAME",
              help="Train on the labelled intervals of this tier of TextGrids beside the audio (each a vowel, any "
                   "language or symbols) instead of TIMIT's CVC tokens.")
@click.option("--pad", type=click.FloatRange(min=0), default=0.1, show_default=True,
              help="With --vowel-tier: seconds of audio on either side of each vowel in its training cut.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False),
              help="Also write the training record (settings and cross-validation scores) to this JSON file.")
def train_vowels(corpus_dir, model_dir, alignment_model, trainers, params, widths, epochs, folds, tau, prior,
                 prior_widen, runs, all_columns, front_end, keep_corrupted, held_out_classifier, vowel_tier, pad, json_out):
    """Train a vowel duration model on the CVC tokens of CORPUS_DIR and save it to MODEL_DIR.

    CORPUS_DIR: TIMIT layout (audio with a .phn beside it, one folder per speaker), or, with
    --vowel-tier, audio with a TextGrid beside it whose tier marks the vowels. Each
    candidate (trainer setting x edge-width set) is fitted with early stopping on validation
    speakers and the best is scored on held-out speakers, in speaker folds; the candidate with
    the lowest validation cost is refitted on every speaker and saved.
    """
    from aligner import api
    from aligner.io.textgrids import atomic_write_text

    options = {"trainers": trainers, "epochs": epochs, "n_folds": folds, "tau": tau, "prior_form": prior,
               "prior_widen": prior_widen, "n_runs": runs, "keep_corrupted": keep_corrupted,
               "held_out_classifier": held_out_classifier, "front_end": front_end}
    if vowel_tier is not None:
        options["vowel_tier"], options["pad_s"] = vowel_tier, pad
    if widths:
        options["width_sets"] = widths
    if all_columns and front_end == "cuts":
        from aligner.features.vowel_acoustics import N_COLUMNS

        options["columns"] = tuple(range(N_COLUMNS))
    progress = _Progress()

    def train():
        try:
            return api.train_vowels(corpus_dir, model_dir, alignment_model, params, progress, **options)
        finally:
            progress.close()  # before an error is printed

    model = run(train)
    from aligner.vowels.training import format_report

    echo(format_report(model.training))
    echo(f"wrote {model_dir} (durations {model.min_dur}-{model.max_dur} frames of 5 ms)")
    if json_out:
        try:
            atomic_write_text(json_out, json.dumps(model.training, indent=1) + "\n")
        except OSError as exc:
            fail(f"{json_out}: {exc.strerror or exc}")
