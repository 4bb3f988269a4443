"""Local scorers over stored answers, as registered specs (`scorers.py`): Mem0's lexical
metrics here (`lexical.py`), each benchmark's own rules in its package (LoCoMo's category F1:
`memorybench.benchmarks.locomo.score`), the row scores and metrics.json's record
(`rows.py`, `score_record.py`).

None of these calls a model. The LLM judge lives beside them in its own module.
"""
