"""Adaptation: a trained aligner re-estimated on a user's corpus (``aligner adapt``).

- :mod:`~aligner.alignment.adaptation.rounds`: recordings, settings and the rounds of
  align -> label -> refit, in one process or on a pool;
- :mod:`~aligner.alignment.adaptation.output_layer`: the frame classifier's output layer refit
  from sufficient statistics;
- :mod:`~aligner.alignment.adaptation.corpus`: a corpus read, adapted and written as a bundle;
- :mod:`~aligner.alignment.adaptation.keep`: each round's changes kept or reverted on held-back
  recordings;
- :mod:`~aligner.alignment.adaptation.pronunciations`: per-alternative pronunciation bonuses from
  the decoder's choices.
"""
