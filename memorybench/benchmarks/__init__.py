"""The benchmarks memorybench runs, one package each: `locomo`, `longmemeval`, `locomo_plus`.

Each package owns what is its own (its record in `__init__.py`: `BENCHMARK`; its loader, pins,
judge, as the record names them); `memorybench.benchmark` says what a record holds and finds
these packages by name. `source.py` is which dataset file a run reads.
"""
