"""Processes: the command runner, evidence, agents and Job Run files (plans, results, git).
Imports ``store`` and ``core``."""
