"""Experiment tracking of finished packs (MLflow), from the driver only.

`mlflow` is imported lazily, inside the functions that talk to it.
"""

from __future__ import annotations

from memorybench.tracking import mlflow_log
from memorybench.tracking.mlflow_log import *  # noqa: F403  (the public API is mlflow_log's __all__)

__all__ = list(mlflow_log.__all__)
