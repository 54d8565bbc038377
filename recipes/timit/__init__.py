"""The TIMIT alignment recipe (``python -m recipes.timit CORPUS_DIR OUT_DIR``); see README.md."""
