"""The task-agnostic learning core: a task interface and structured trainers.

Nothing here knows about speech. A task implements :class:`StructuredTask`; any
trainer in :data:`TRAINERS` learns its weights.
"""

from aligner.learn.ensemble import SeedAveragedTrainer, seed_averaged
from aligner.learn.multiclass import MulticlassTask, random_cost_matrix
from aligner.learn.task import CountingTask, StructuredTask
from aligner.learn.trainers import (
    TRAINERS,
    DirectAwayTrainer,
    DirectTowardTrainer,
    EpochRecord,
    FitResult,
    OrbitTrainer,
    PerceptronTrainer,
    ProbitTrainer,
    RampTrainer,
    SVMTrainer,
    Trainer,
    make_trainer,
    orbit_loss,
)

__all__ = [
    "StructuredTask", "CountingTask", "MulticlassTask", "random_cost_matrix", "Trainer",
    "EpochRecord", "FitResult", "PerceptronTrainer", "SVMTrainer", "RampTrainer",
    "DirectTowardTrainer", "DirectAwayTrainer", "ProbitTrainer", "OrbitTrainer",
    "TRAINERS", "make_trainer", "orbit_loss", "SeedAveragedTrainer",
    "seed_averaged",
]
