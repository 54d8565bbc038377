"""Training recipes: one command from a corpus to trained models and a results table."""
