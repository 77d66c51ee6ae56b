"""Typed configuration: ``Settings`` and its sections. The bottom layer: imports nothing above it."""
