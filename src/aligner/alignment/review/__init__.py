"""Review: how far to trust an alignment.

- :mod:`~aligner.alignment.review.evidence`: each boundary's evidence from the decoder's score
  margins (numba kernels over the DP's terms);
- :mod:`~aligner.alignment.review.confidence`: the boundary confidence model (probability that
  a boundary lies within 20 ms of an annotator's) and the transcript-mismatch check.
"""
