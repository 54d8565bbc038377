"""Phones: the phone sets the aligner reads, a model's phone inventory, other languages' phones.

- :mod:`~aligner.phones.sets`: TIMIT-61, the 39 classes of Lee & Hon (1989), ARPAbet, and the
  broad classes: the one phonetic table of the shipped English model;
- :mod:`~aligner.phones.inventory`: a model's classes from its training data's symbols, read as
  IPA with phonological features (panphon) where needed;
- :mod:`~aligner.phones.languages`: a language the model never heard, reached through the
  model's closest phone by features.
"""
