"""Streams, events, stream contexts (issue 4; in progress)."""

__all__ = []
