"""The one exception base of Sluicegate.

Every exception the project defines derives from :class:`SluicegateError`, one class per failure
(``ConfigError``, ``ForgeError``, ``InvalidDelivery``, ``CapacityRefused``, ...), so a caller that
must not let any Sluicegate failure escape can catch one type, and a reader can list them all with
``SluicegateError.__subclasses__()`` (recursively). Deriving from it changes nothing else: each class
is still raised and caught by its own name. Pure: no imports, so every layer (workflows too) may use it.
"""

from __future__ import annotations


class SluicegateError(Exception):
    """Base of every exception Sluicegate defines."""
