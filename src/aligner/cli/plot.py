"""`aligner plot`: a review picture of an alignment (waveform, spectrogram, tiers) as a PNG."""

from __future__ import annotations

import click

from aligner.cli.common import echo, run


def _tier_list(ctx, param, value):
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise click.BadParameter("give one or more tier names, separated by commas")
    return names


@click.command("plot")
@click.argument("audio", type=click.Path(dir_okay=False))
@click.argument("textgrid", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="PNG to write [the TextGrid's name with .png, beside it].")
@click.option("--start", "start_s", type=float, help="Draw from this time, in seconds [0].")
@click.option("--end", "end_s", type=float, help="Draw up to this time, in seconds [the end of the recording].")
@click.option("--tiers", callback=_tier_list, metavar="NAME,...",
              help="Interval tiers to draw, top to bottom, separated by commas [all].")
@click.option("--confidence", "confidence_csv", type=click.Path(dir_okay=False),
              help="The aligner's CSV with a Confidence column, to colour the boundaries by "
                   "[the TextGrid's 'TIER confidence' point tiers, if any].")
@click.option("--width", type=click.FloatRange(min=0, min_open=True), default=12.0, show_default=True,
              help="Picture width in inches.")
@click.option("--height", type=click.FloatRange(min=0, min_open=True),
              help="Picture height in inches [4.4 plus 0.42 per tier].")
@click.option("--dpi", type=click.IntRange(min=1), default=150, show_default=True, help="Dots per inch.")
def plot(audio, textgrid, output, start_s, end_s, tiers, confidence_csv, width, height, dpi):
    """Draw AUDIO's waveform and spectrogram (0-8 kHz) above TEXTGRID's interval tiers, to
    review an alignment; boundaries run through all of them.

    Boundaries are coloured by confidence (red = low, green = high) when the TextGrid has point
    tiers named "TIER confidence" or --confidence gives the aligner's CSV; otherwise blue.
    Labels too wide for their interval are drawn smaller or upright, or left out: zoom in with
    --start/--end. At most 60 s are drawn in one picture. Needs the optional extra "plot":
    pip install "aligner[plot]".
    """
    import warnings

    from aligner.plotting import plot_alignment

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(plot_alignment, audio, textgrid, output, start_s, end_s, tiers, confidence_csv,
                  width_in=width, height_in=height, dpi=dpi)
    for warning in caught:
        echo(f"warning: {warning.message}", err=True)
    echo(str(out))
