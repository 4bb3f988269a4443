"""Cloud Run (DESIGN.md 8): a sweep or a wave as ONE job execution with one task per entry.

    records.py     the manifest, task status and provenance records (schema-versioned)
    manifest.py    build, write, read and parse a manifest; read its tasks' status records
    task.py        what every task shares: its context from Cloud Run's variables, its status
    executors.py   run a manifest's tasks: on Cloud Run (Admin API v2) or as local processes
    waves.py       a later stage over finished packs (autorater, aggregate, ...): driver and task
    worker.py      `python -m memorybench.cloudrun.worker`: one task of any manifest; the qa task

Imports only point down: records <- manifest <- task and executors <- waves <- worker
(the worker runs a wave's task; a wave never imports the worker). The Hydra launcher
(`hydra/launcher=cloudrun`) is in launchers/; the pack's own record of a task
(`provenance/cloudrun.json`) is memorybench.pack.provenance_record.
"""
