"""Shipped default models (installed as ``aligner._models``); see README.md in this folder."""
