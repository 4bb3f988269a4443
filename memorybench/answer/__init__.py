"""Answerers: the one-call reader (and, later, the Codex agent)."""
