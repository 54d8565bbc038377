"""Decoding: forced alignment as structured tasks, and what turns their decodes into phones.

- :mod:`~aligner.alignment.decoding.task`: one phone sequence, the segmental DP (SPEC section 3);
- :mod:`~aligner.alignment.decoding.graph`, :mod:`~aligner.alignment.decoding.graph_task`,
  :mod:`~aligner.alignment.decoding.graph_band`: pronunciation graphs from words, their exact DP
  and its banded version (SPEC section 6);
- :mod:`~aligner.alignment.decoding.words`: words -> graph -> words and phones tiers;
- :mod:`~aligner.alignment.decoding.long_recordings`: recordings of any length in banded chunks;
- :mod:`~aligner.alignment.decoding.refinement`: the sub-frame boundary refiner;
- :mod:`~aligner.alignment.decoding.stop_closures`: ARPAbet stops as closure + release.
"""
