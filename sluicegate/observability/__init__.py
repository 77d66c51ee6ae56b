"""Logging, tracing and metrics. Imports only ``sluicegate.config``."""
