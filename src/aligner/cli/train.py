"""`aligner train`: an alignment model from a TIMIT-layout corpus."""

from __future__ import annotations

import click

from aligner.cli.common import echo, run


@click.command("train")
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--trainer", type=click.Choice(["perceptron", "svm", "ramp", "direct_toward", "direct_away",
                                              "probit", "orbit"]), default="orbit", show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--eta0", type=float, default=None,
              help="Step size (constant, averaged) [0.01].")
@click.option("--lam", type=float, default=None, help="L2 regularisation [trainer's default].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=4, show_default=True,
              help="Speaker folds for the out-of-fold classifier scores.")
def train(corpus_dir, out_dir, trainer, epochs, eta0, lam, seed, folds):
    """Train an alignment model on CORPUS_DIR (TIMIT layout: audio + .phn) into OUT_DIR."""
    from aligner import api

    params = {"epochs": epochs, "seed": seed}
    if eta0 is not None:
        params["eta0"] = eta0
    if lam is not None:
        params["lam"] = lam

    def progress(stage, done, total):
        echo(f"\r{stage}: {done}/{total}", err=True, nl=(done == total))

    def epoch(record):
        echo(f"epoch {record.epoch}: train cost {record.train_cost:.4f}, "
                   f"validation cost {record.val_cost:.4f}, {record.seconds:.1f} s", err=True)

    model = run(api.train, corpus_dir, out_dir, trainer, params, None, folds, 2, progress, epoch)
    echo(f"wrote {out_dir} (weights {', '.join(f'{v:.3g}' for v in model.weights)})")
