"""The exception tree of langmem-cog.

Every error raised on purpose by the library derives from :class:`LangMemCogError`
and, where one fits, from the matching builtin too, so ``except ValueError``
keeps working for callers that do not know this package.

Messages name the bad value and say what to do about it.
"""

from __future__ import annotations

__all__ = [
    "LangMemCogError",
    "InvalidInputError",
    "InvalidNamespaceError",
    "DuplicateTurnError",
    "UnknownNamespaceError",
    "ConfigError",
    "ModelNotFoundError",
    "DamagedModelError",
    "StoreError",
    "ResourceLimitError",
    "ExtractionError",
    "ShortcutFieldError",
]


class LangMemCogError(Exception):
    """Base class of every error raised by langmem-cog."""


class InvalidInputError(LangMemCogError, ValueError):
    """An argument has the wrong type or value (empty text, naive timestamp, ...)."""


class InvalidNamespaceError(InvalidInputError):
    """A namespace id is malformed (see ``langmem_cog.records.NAMESPACE_PATTERN``)."""


class DuplicateTurnError(InvalidInputError):
    """A turn id is added twice to the same namespace (in one call or across calls)."""


class UnknownNamespaceError(InvalidInputError, LookupError):
    """A namespace holds no turns (never written, or forgotten)."""

    def __str__(self) -> str:  # LookupError's KeyError-style quoting is not wanted
        return str(self.args[0]) if self.args else ""


class ConfigError(LangMemCogError, ValueError):
    """A configuration value or preset name is invalid."""


class ModelNotFoundError(LangMemCogError, FileNotFoundError):
    """A model directory or packaged model is missing; the message says how to install it."""


class DamagedModelError(LangMemCogError, ValueError):
    """A model file is truncated, altered or holds values no model can (non-finite weights); the
    message names the file and how to restore it."""


class StoreError(LangMemCogError, RuntimeError):
    """The raw store or one of its indexes is unusable (corrupt file, unreachable server)."""


class ResourceLimitError(StoreError):
    """The process reached a limit it runs under (open files), so a store file could not be opened; nothing
    stored is damaged. The message names the limit and how to raise it, or how to need less of it
    (``CogMemConfig.open_namespaces``)."""


class ExtractionError(LangMemCogError, RuntimeError):
    """An extractor could not turn a turn into records (e.g. a model kept returning invalid JSON)."""


class ShortcutFieldError(InvalidInputError):
    """A candidate carries a gold or teacher field that a ranker must never see."""
