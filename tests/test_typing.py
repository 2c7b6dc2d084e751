"""The package ships typed (PEP 561): a user's mypy reads its annotations, not ``Any``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[1]

USER_CODE = """\
import langmem_cog.integrations.langgraph
import langmem_cog
from langmem_cog import CogMemory, CogMemRetriever


def recall(m: CogMemory) -> None:
    reveal_type(CogMemRetriever(memory=m, namespace="a").invoke("q"))  # line 7
    CogMemRetriever(memory=m, namespace="a", k="three")  # line 8
"""


def test_user_code_is_type_checked_against_the_installed_package(tmp_path: Path) -> None:
    # A user's project in its own directory, with mypy's default settings less the big model libraries
    # (thousands of modules the checks do not read). This checkout goes on the interpreter's sys.path, where
    # an install (site-packages, an editable install's .pth) puts it: unlike MYPYPATH, mypy then reads a
    # package only if it is marked typed.
    (tmp_path / "user.py").write_text(USER_CODE, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-torch.*,transformers.*,sentence_transformers.*]\n"
                                       "follow_imports = skip\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "user.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr

    assert "missing library stubs or py.typed marker" not in out, out
    assert "import-untyped" not in out, out
    assert re.search(r'user\.py:7: note: Revealed type is "(builtins\.)?list\[langchain_core\.documents\.base\.Document\]"',
                     out), out
    assert re.search(r'user\.py:8: error: Argument "k" to "CogMemRetriever" has incompatible type "str"', out), out
    # Nothing else is reported: the package's own annotations hold for this use.
    assert re.findall(r"^user\.py:\d+: error", out, flags=re.M) == ["user.py:8: error"], out
