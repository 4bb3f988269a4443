"""Experiment tracking of finished packs (MLflow), from the driver only.

`mlflow` is imported lazily, inside the functions that talk to it.
"""

from __future__ import annotations

from memorybench.tracking.mlflow_log import (
    TrackedRun,
    TrackingResult,
    default_tracking_uri,
    log_packs,
    log_run_specs,
    pack_metrics,
    pack_params,
    sweep_name,
    track_main,
    tracking_uri_from_config,
)

__all__ = [
    "TrackedRun",
    "TrackingResult",
    "default_tracking_uri",
    "log_packs",
    "log_run_specs",
    "pack_metrics",
    "pack_params",
    "sweep_name",
    "track_main",
    "tracking_uri_from_config",
]
