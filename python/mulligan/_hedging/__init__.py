"""Hedged calls for coroutine functions: ``@mulligan.hedge`` (Added in 0.5.)."""

from .hedge import hedge

__all__ = ["hedge"]
