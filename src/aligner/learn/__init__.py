"""The task-agnostic learning core: a task interface, structured trainers and their selection.

Nothing here knows about speech. A task implements :class:`StructuredTask`; any trainer in
:data:`TRAINERS` (scikit-learn estimators: ``fit`` returns the trainer, whose ``w_`` are the
learnt weights) learns its weights; :class:`ValidationSearch` chooses among trainers by their
cost on validation examples.

Names are loaded on first use (PEP 562), so a module that needs only the task interface or the
costs (the aligner at run time) does not import scikit-learn with the trainers.
"""

from importlib import import_module

_WHERE = {
    "StructuredTask": "task", "CountingTask": "task",
    "MulticlassTask": "multiclass", "random_cost_matrix": "multiclass",
    "SeedAveragedTrainer": "ensemble", "seed_averaged": "ensemble",
    "ValidationSearch": "selection", "param_grid": "selection", "parameter_key": "selection",
    "plain_params": "selection",
    **{name: "trainers" for name in (
        "TRAINERS", "DirectAwayTrainer", "DirectTowardTrainer", "EpochEnd", "EpochRecord", "OnlineTrainer",
        "OrbitTrainer", "PerceptronTrainer", "ProbitTrainer", "RampTrainer", "SVMTrainer", "Trainer",
        "make_trainer", "orbit_loss")},
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'aligner.learn' has no attribute {name!r}")
    value = getattr(import_module(f"aligner.learn.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
