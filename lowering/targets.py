"""Lowering's view of the chip table, which lives in ``dsl.targets`` (one table for
the launcher, lowering and the operators' chip rules)."""

from dsl.targets import DEFAULT_TARGET, TARGETS, Target, get_target

__all__ = ["DEFAULT_TARGET", "TARGETS", "Target", "get_target"]
