"""The ``langmem-cog`` command line: demo, search, benchmarks, model installation.

Run ``langmem-cog --help`` for the commands. Progress bars and printing live
here, never in the library. Each command group is one module that registers its
own subcommands (``add_parsers``): :mod:`~langmem_cog.cli.demo`,
:mod:`~langmem_cog.cli.search`, :mod:`~langmem_cog.cli.memory` (ingest, list,
forget, purge-server), :mod:`~langmem_cog.cli.bench`, :mod:`~langmem_cog.cli.ui`
and :mod:`~langmem_cog.cli.models` (train-models, models install); what they
share is in :mod:`~langmem_cog.cli._common`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from langmem_cog.cli import bench, demo, memory, models, search, ui
from langmem_cog.cli._common import offline_env, package_version
from langmem_cog.errors import LangMemCogError

__all__ = ["build_parser", "main"]


class _Command(argparse.ArgumentParser):
    """The parser of a subcommand: an argument it does not know is reported with its own usage
    (``langmem-cog search: error: unrecognized arguments: --bogus``, exit code 2), not the top level's."""

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        parsed, extra = super().parse_known_args(*args, **kwargs)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``langmem-cog``."""
    p = argparse.ArgumentParser(prog="langmem-cog", description="Long-term memory for LangChain/LangGraph agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                   help="print the installed langmem-cog version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Command)
    for group in (demo, search, memory, bench, ui, models):  # the order of `langmem-cog --help`
        group.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langmem-cog``."""
    offline_env()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "transformers", "sentence_transformers", "chromadb", "httpx"):
        logging.getLogger(noisy).setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except LangMemCogError as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())  # one line
        print(f"langmem-cog: error: {message}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        print("langmem-cog: interrupted", file=sys.stderr)
        return 130
