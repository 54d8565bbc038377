"""aligner: phoneme forced alignment and vowel duration measurement.

The learning core (:mod:`aligner.learn`) knows nothing of speech; the tasks
(:mod:`aligner.alignment.decoding.task`, :mod:`aligner.vowels.task`) know nothing of the trainers.
"""

__version__ = "0.29.0"
