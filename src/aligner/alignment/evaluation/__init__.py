"""Evaluation: alignments scored against reference alignments.

- :mod:`~aligner.alignment.evaluation.phones`: the phone metrics of SPEC section 5 and the
  matching of reference and hypothesis files;
- :mod:`~aligner.alignment.evaluation.words`: FA-Bench's word track (word edges, boundary F1)
  and label-paired phone metrics;
- :mod:`~aligner.alignment.evaluation.references`: TIMIT references read as ARPAbet.
"""
