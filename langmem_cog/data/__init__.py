"""The data files shipped inside the package, found wherever the package is installed.

``sample_conversation.json`` is the small LoCoMo-format conversation of the quickstart and the
demo (see ``README.md`` in this folder); ``attribution_probe.json`` is the attribution probe. Use
these helpers rather than a path relative to the repository, which only works from its root.

Example:
    >>> from langmem_cog import load_locomo
    >>> conv = load_locomo(sample_path())[0]
    >>> conv.sample_id, len(conv.turns)
    ('demo-1', 105)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from langmem_cog.errors import InvalidInputError, StoreError

__all__ = ["sample_path", "attribution_probe_path", "data_path", "DATA_FILES"]

#: The data files shipped in this package.
DATA_FILES = ("sample_conversation.json", "attribution_probe.json")


def data_path(name: str) -> Path:
    """The path of one shipped data file.

    Args:
        name: One of :data:`DATA_FILES`.

    Returns:
        The file's path inside the installed package.

    Raises:
        InvalidInputError: If ``name`` is not a shipped data file.
        StoreError: If the package is installed somewhere that has no file paths (a zip archive) or
            the file is missing from the installation.
    """
    if name not in DATA_FILES:
        raise InvalidInputError(f"{name!r} is not a shipped data file: use one of {list(DATA_FILES)}")
    resource = resources.files(__name__) / name
    if not isinstance(resource, Path):
        raise StoreError(f"langmem_cog is installed without file paths ({resource!r}): install it as a regular "
                         "package (pip install langmem-cog), not from a zip archive")
    if not resource.is_file():
        raise StoreError(f"the shipped data file {resource} is missing: reinstall langmem-cog")
    return resource


def sample_path() -> Path:
    """The bundled sample conversation (LoCoMo format: ``demo-1``, Maya and Leo, 105 turns).

    Example:
        >>> sample_path().name
        'sample_conversation.json'
    """
    return data_path("sample_conversation.json")


def attribution_probe_path() -> Path:
    """The bundled attribution probe (72 record / opinion pairs; see this folder's README)."""
    return data_path("attribution_probe.json")
