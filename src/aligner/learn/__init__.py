"""The task-agnostic learning core: a task interface, structured trainers and their selection.

Nothing here knows about speech. A task implements :class:`StructuredTask`; any trainer in
:data:`TRAINERS` (scikit-learn estimators: ``fit`` returns the trainer, whose ``w_`` are the
learnt weights) learns its weights; :class:`ValidationSearch` chooses among trainers by their
cost on validation examples.
"""

from aligner.learn.ensemble import SeedAveragedTrainer, seed_averaged
from aligner.learn.multiclass import MulticlassTask, random_cost_matrix
from aligner.learn.selection import ValidationSearch, param_grid, parameter_key, plain_params
from aligner.learn.task import CountingTask, StructuredTask
from aligner.learn.trainers import (
    TRAINERS,
    DirectAwayTrainer,
    DirectTowardTrainer,
    EpochEnd,
    EpochRecord,
    OnlineTrainer,
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
    "OnlineTrainer", "EpochRecord", "EpochEnd", "PerceptronTrainer", "SVMTrainer", "RampTrainer",
    "DirectTowardTrainer", "DirectAwayTrainer", "ProbitTrainer", "OrbitTrainer",
    "TRAINERS", "make_trainer", "orbit_loss", "SeedAveragedTrainer", "seed_averaged",
    "ValidationSearch", "param_grid", "plain_params", "parameter_key",
]
