"""The forced aligner, in rooms.

- :mod:`~aligner.alignment.model`: a trained aligner (frame classifier, durations, 7 weights,
  refiner, experts and their gates) and its bundle; :mod:`~aligner.alignment.conditions`: the
  gates that route a recording to an expert;
- :mod:`~aligner.alignment.pipeline`: one recording through the aligner (read, check, decode,
  refine, review, write); :mod:`~aligner.alignment.corpus`: ``align-corpus`` and ``oovs``;
- :mod:`~aligner.alignment.training`: ``aligner train``;
- :mod:`aligner.alignment.decoding`: the structured tasks and their decoders (phone sequences,
  pronunciation graphs, banded and long-recording decodes), the boundary refiner, stop closures;
- :mod:`aligner.alignment.review`: per-boundary confidence and the transcript check;
- :mod:`aligner.alignment.adaptation`: ``aligner adapt``, re-estimating a model on a corpus;
- :mod:`aligner.alignment.evaluation`: phone and word scoring against reference alignments.

Phone sets, a model's phone inventory and the mapping of other languages' phones live in
:mod:`aligner.phones`.
"""
