"""`aligner train`: an alignment model from a TIMIT-layout corpus."""

from __future__ import annotations

import click

from aligner.cli.common import echo, exit_if_failed, run


@click.command("train")
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--trainer", type=click.Choice(["perceptron", "svm", "ramp", "direct_toward", "direct_away",
                                              "probit", "orbit"]), default="orbit", show_default=True,
              help="Trainer of the 7 weights [orbit; with --universal: svm].")
@click.option("--epochs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--eta0", type=float, default=None,
              help="Step size (constant, averaged) [0.01].")
@click.option("--lam", type=float, default=None, help="L2 regularisation [trainer's default].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=4, show_default=True,
              help="Speaker folds for the out-of-fold classifier scores.")
@click.option("--phones-tier", default=None, metavar="NAME",
              help="Read hand-aligned phones from this interval tier of TextGrids beside the audio [the tier "
                   "named phones, phone, phonemes or segments].")
@click.option("--phone-classes", type=click.Path(exists=True, dir_okay=False), default=None,
              help="File of 'SYMBOL BROAD_CLASS [CLASS]' lines: each symbol's broad class (vowel, glide, nasal, "
                   "stop, affricate, fricative, silence) and optionally the class it joins.")
@click.option("--phone-code", type=click.Choice(["auto", "ipa", "xsampa", "arpabet", "timit", "buckeye"]),
              default="auto", show_default=True,
              help="The symbols' code, read as IPA for their phonological features (auto: IPA, or TIMIT/ARPAbet "
                   "when every symbol is one).")
@click.option("--min-class-tokens", type=click.IntRange(min=1), default=None,
              help="A symbol seen fewer times joins the nearest class of its broad class [20].")
@click.option("--augment", default=None, metavar="RECIPE",
              help="Multi-condition training: the frame classifier also learns from degraded copies "
                   "(simulated rooms, noise, phone lines, clipping) made as the JSON recipe RECIPE says, "
                   "or 'default' (recipes/conditions/multi-condition.json), and the boundary refiner from "
                   "their decodes (with --universal: the scorer alone, e.g. recipes/conditions/field.json). "
                   "Rooms need: pip install 'aligner[train]'.")
@click.option("--classifier", "classifier_kind", type=click.Choice(["network", "kernel"]), default="network",
              show_default=True,
              help="Frame classifier: a network of 512 ReLU units, or the Nystroem-RBF kernel with linear SVMs "
                   "of the models shipped before it.")
@click.option("--max-frames", type=click.IntRange(min=1000), default=None,
              help="Train the frame classifier on a random subset of at most this many frames [60000]; "
                   "multi-condition training, with several copies of every utterance, gains from more.")
@click.option("--networks", type=click.IntRange(1, 16), default=None,
              help="With the network classifier: train this many networks (successive seeds, so other "
                   "subsamples of the frames) and average them into one [3]; the final classifier takes "
                   "about as many times longer to train, and aligning scores their live units.")
@click.option("--phone-line", is_flag=True,
              help="Train a phone-line model: every recording, in training and when the model aligns, is heard "
                   "through the 250-3600 Hz band a telephone keeps (the band expert of a multi-condition model; "
                   "pair it with a phone-line recipe such as recipes/conditions/phone-line.json).")
@click.option("--universal", is_flag=True,
              help="Train a universal model: TextGrids of IPA (or, with --phone-code xsampa, X-SAMPA) phones, one "
                   "folder per language; its frame scores, durations and refiner work by phonological features, "
                   "so it aligns any IPA phone, heard in training or not (--phone-set ipa). --folds: language "
                   "folds of its out-of-fold scores [3]; --max-frames: frames its scorer trains on [200000].")
@click.option("--distil-units", type=click.IntRange(min=8), default=None, metavar="N",
              help="With --universal: distil the averaged scorer (768 units) into one network of N units trained "
                   "to reproduce it, a faster model to align with (off by default; the shipped models/universal "
                   "is distilled into 256, as accurate: docs/results.md).")
def train(corpus_dir, out_dir, trainer, epochs, eta0, lam, seed, folds, phones_tier, phone_classes, phone_code,
          min_class_tokens, augment, classifier_kind, max_frames, networks, phone_line, universal, distil_units):
    """Train an alignment model on CORPUS_DIR into OUT_DIR.

    CORPUS_DIR holds audio with hand-aligned phones beside it: TIMIT .phn files (a 39-class
    model, as the shipped one), or Praat TextGrids with a phones tier in any symbols (IPA,
    X-SAMPA, ARPAbet, TIMIT, Buckeye-style; speakers from folders, as MFA reads them): a model
    of the data's own phones, whose classes are printed before training."""
    from aligner import api
    from aligner.alignment.training import KERNEL_CLASSIFIER_PARAMS, NETWORK_CLASSIFIER_PARAMS
    from aligner.features.band import PHONE_BAND_HZ

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

    def inventory(choice):
        echo(f"{len(choice.inventory)} phone classes (class, broad class, symbols):", err=True)
        for line in choice.describe():
            echo("  " + line.replace("\t", "  "), err=True)
        for symbol, target in sorted(choice.folded.items()):
            echo(f"  rare symbol {symbol!r} joins class {target!r}", err=True)

    classifier = dict(NETWORK_CLASSIFIER_PARAMS if classifier_kind == "network" else KERNEL_CLASSIFIER_PARAMS)
    if max_frames is not None:
        classifier["max_train_frames"] = max_frames
    if networks is not None:
        if classifier_kind != "network":
            raise click.UsageError("--networks needs --classifier network")
        classifier["networks"] = networks
    failed: list = []
    if distil_units is not None and not universal:
        raise click.UsageError("--distil-units distils a universal model's scorer: use it with --universal "
                               "(recipes/distil/distil.py distils an English model's classifier)")
    if universal:
        if phone_code not in ("auto", "ipa", "xsampa"):
            raise click.UsageError("--universal reads IPA or X-SAMPA phones (--phone-code ipa or xsampa)")
        if phone_classes or min_class_tokens or networks or phone_line or classifier_kind != "network":
            raise click.UsageError("--universal composes its classes from phonological features: --phone-classes, "
                                   "--min-class-tokens, --networks, --phone-line and --classifier do not apply")
        settings = {"seed": seed} if max_frames is None else {"seed": seed, "max_train_frames": max_frames}
        if augment is not None:
            settings["conditions"] = universal_conditions(augment)
        if distil_units is not None:
            settings["distil_units"] = distil_units
        if click.get_current_context().get_parameter_source("trainer").name == "DEFAULT":
            trainer = None  # the universal models' own trainer
        model = run(api.train, corpus_dir, out_dir, trainer, params, settings,
                    folds if click.get_current_context().get_parameter_source("folds").name != "DEFAULT" else 3,
                    None, progress, epoch, phones_tier=phones_tier, phone_code=phone_code, failed=failed,
                    universal=True)
        echo(f"wrote {out_dir} (universal; {model.training['phones']} phones of {len(model.training['languages'])} "
             f"languages; weights {', '.join(f'{v:.3g}' for v in model.weights)})")
        exit_if_failed(failed, "files left out of the training")
        return
    model = run(api.train, corpus_dir, out_dir, trainer, params, classifier, folds, 2, progress, epoch,
                phones_tier=phones_tier, phone_classes=phone_classes, phone_code=phone_code,
                min_class_tokens=min_class_tokens, on_inventory=inventory, augment=augment,
                front_band_hz=PHONE_BAND_HZ if phone_line else None, failed=failed)
    echo(f"wrote {out_dir} (weights {', '.join(f'{v:.3g}' for v in model.weights)})")
    exit_if_failed([(utt, message) for utt, message in failed], "files left out of the training")


def universal_conditions(path) -> dict:
    """The recipe at ``path`` (JSON; ``default``: the multi-condition defaults) as the dict of
    :attr:`~aligner.alignment.universal_training.UniversalSettings.conditions`; a bad one is a
    one-line usage error naming the file."""
    from aligner.features.augment import AugmentationRecipe, RecipeError

    try:
        recipe = AugmentationRecipe() if path == "default" else AugmentationRecipe.from_json_file(path)
        return recipe.to_dict()
    except RecipeError as exc:
        raise click.UsageError(str(exc)) from None
