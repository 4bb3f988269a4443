"""memorybench's Hydra launcher: a sweep as ONE Cloud Run job execution with task_count=N."""

__version__ = "0.1.0"
