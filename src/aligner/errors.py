"""Exceptions with messages a user can act on: each names the file and the problem."""


class AlignerError(Exception):
    """Base class of every error aligner raises on bad input; the CLI prints it on one line."""


class AudioError(AlignerError):
    """An audio file is missing, unreadable, empty, silent or too short."""


class TranscriptError(AlignerError):
    """A transcript is missing, empty or holds a symbol outside the phone set."""


class AlignmentError(AlignerError):
    """No segmentation fits (e.g. more phones than the audio can hold)."""


class ModelError(AlignerError):
    """A model directory is missing, truncated, tampered with or of the wrong version."""


class FeatureError(AlignerError):
    """Features are malformed (wrong shape, NaN where none may be)."""


class OutputError(AlignerError):
    """An output could not be written (full disk, read-only or missing permission, ...)."""
