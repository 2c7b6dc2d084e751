"""What the command groups of ``langmem-cog`` share: the environment set at start, the progress bar,
the usage error, the config of a command and the messages that name a store or a namespace."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langmem_cog.errors import LangMemCogError

#: ``--data-dir``'s help for the commands that open a store.
DATA_DIR_HELP = ("the store's folder (default: $LANGMEM_COG_DATA_DIR, else $XDG_DATA_HOME/langmem-cog or "
                 "~/.local/share/langmem-cog)")


def progress(it: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    """``it`` with a progress bar on stderr (the ``progress`` argument of the ingest and the benchmarks)."""
    from tqdm import tqdm

    return tqdm(it, desc=desc, total=total, file=sys.stderr, leave=False, dynamic_ncols=True)


def offline_env() -> None:
    """The environment defaults :func:`langmem_cog.cli.main` sets before anything else runs."""
    # The CLI never reaches a model hub: fail fast instead of hanging on the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class CLIError(LangMemCogError):
    """A command-line failure whose message names the option or argument to fix.

    Args:
        message: The one-line message printed after ``langmem-cog: error:``.
        exit_code: What :func:`langmem_cog.cli.main` returns (2: a usage error; 1: the command ran and failed).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def package_version() -> str:
    """The installed package version (``importlib.metadata``), else the source tree's ``__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langmem-cog")
    except PackageNotFoundError:  # running from a source tree that is not installed
        from langmem_cog import __version__

        return __version__


def command_config(args: argparse.Namespace, *, must_exist: bool) -> Any:
    """The config of a command: ``LANGMEM_COG_*`` variables, then ``--data-dir``.

    Args:
        args: The parsed arguments (``data_dir`` is read when present).
        must_exist: Refuse a data folder that does not exist (commands that only read or delete).

    Returns:
        The :class:`~langmem_cog.config.CogMemConfig`.

    Raises:
        CLIError: If the data folder is a file, or is missing and ``must_exist`` is set.
    """
    from langmem_cog import CogMemConfig

    cfg = CogMemConfig.from_env()
    given = getattr(args, "data_dir", None)
    if given:
        cfg = cfg.model_copy(update={"data_dir": Path(given)})
    if cfg.chroma_mode != "persistent":
        return cfg
    where = cfg.resolved_data_dir()
    origin = ("" if given else " (from LANGMEM_COG_DATA_DIR; --data-dir overrides it)" if os.environ.get("LANGMEM_COG_DATA_DIR")
              else " (the default; --data-dir or LANGMEM_COG_DATA_DIR moves it)")
    if where.exists() and not where.is_dir():
        raise CLIError(f"--data-dir {where} is a file, not a folder{origin}: pass the folder that holds the store")
    if must_exist and not where.is_dir():
        raise CLIError(f"--data-dir {where} does not exist{origin}: pass the folder `langmem-cog ingest` "
                        "wrote to, or ingest something first")
    return cfg


def list_hint(where: str) -> str:
    """The ``langmem-cog list`` command that shows the namespaces of the store at ``where``."""
    import shlex

    return f"`langmem-cog list --data-dir {shlex.quote(where)}`" if Path(where).is_absolute() else "`langmem-cog list`"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``counted(2, "turn")`` is ``"2 turns"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def store_location(cfg: Any) -> str:
    """Where a config's store lives, for messages: its absolute data folder, or its Chroma server."""
    if cfg.chroma_mode == "persistent":
        return str(cfg.resolved_data_dir().resolve())
    return f"the Chroma server at {cfg.chroma_host}:{cfg.chroma_port}"


def valid_namespace(namespace: str, option: str) -> str:
    """``namespace`` if it is a valid namespace id; otherwise a usage error that names ``option``."""
    from langmem_cog.errors import InvalidNamespaceError
    from langmem_cog.records import validate_namespace

    try:
        return validate_namespace(namespace)
    except InvalidNamespaceError as exc:
        raise CLIError(f"{option}: {exc}") from None


def require_namespace(store: Any, namespace: str, where: str, *, option: str = "--namespace",
                       exit_code: int = 2) -> None:
    """Fail with a message naming ``option`` unless the store holds ``namespace``."""
    if not store.has_namespace(valid_namespace(namespace, option)):
        raise CLIError(f"namespace {namespace!r} holds no turns in {where}: check {option} and --data-dir "
                        f"({list_hint(where)} shows the stored namespaces)", exit_code)
