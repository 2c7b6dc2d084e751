"""Every ```python block of README.md and docs/AGENTS.md runs as a user would run it: a fresh
process, an empty working directory (so no path relative to the repository can work), offline.

A README block that cannot run offline is marked by an HTML comment on the line before its fence,
``<!-- not-run: reason -->``; such blocks are skipped (keep them few). docs/AGENTS.md has none: every
block of the agent guide runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from langmem_cog.data import DATA_FILES, data_path, sample_path
from langmem_cog.errors import InvalidInputError

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
AGENTS = ROOT / "docs" / "AGENTS.md"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    code: str
    not_run: str | None  # the reason, when marked not-run


def readme_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, each with its not-run reason (if marked)."""
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = [ln for ln in text[: match.start()].splitlines() if ln.strip()]
        marker = NOT_RUN.search(before[-1]) if before else None
        blocks.append(Block(line=line, code=match.group(1), not_run=marker.group(1) if marker else None))
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
AGENT_BLOCKS = readme_blocks(AGENTS.read_text(encoding="utf-8"))


def run_block(doc: str, block: Block, tmp_path: Path) -> None:
    """Run one block in a fresh process from an empty directory, offline; fail with its stderr."""
    work = tmp_path / "empty"
    work.mkdir()
    # The blocks inherit this process's environment, so they share its default cache directory (the ONNX
    # graphs exported from the packaged weights, not data).
    (tmp_path / "data").mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT),
           # A block that forgets to pass a data_dir writes here, never to the user's data directory.
           "LANGMEM_COG_DATA_DIR": str(tmp_path / "data")}
    for key in ("LMC_CHAT_MODEL", "LANGMEM_COG_RETRIEVAL", "LANGMEM_COG_CHROMA_URL"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-c", block.code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{doc} block at line {block.line} failed:\n{proc.stderr[-4000:]}"


def test_readme_blocks_are_found_and_skips_are_explained() -> None:
    assert len(BLOCKS) >= 2
    assert all(b.not_run for b in BLOCKS if b.not_run is not None), "a not-run marker needs a reason"
    assert sum(b.not_run is not None for b in BLOCKS) <= 1, "keep README blocks runnable offline"


def test_block_parser_reads_markers() -> None:
    text = "intro\n\n<!-- not-run: needs OPENAI_API_KEY -->\n```python\nimport os\n```\n\n```python\nprint(1)\n```\n"
    blocks = readme_blocks(text)
    assert [(b.line, b.code, b.not_run) for b in blocks] == [
        (4, "import os\n", "needs OPENAI_API_KEY"),
        (8, "print(1)\n", None),
    ]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_readme_block_runs_from_an_empty_directory(block: Block, tmp_path: Path) -> None:
    if block.not_run:
        pytest.skip(f"marked not-run in README.md: {block.not_run}")
    run_block("README.md", block, tmp_path)


def test_agent_guide_blocks_are_found_and_all_run() -> None:
    assert len(AGENT_BLOCKS) >= 4  # namespace, what is remembered, the mode switch, the complete example
    assert not [b.line for b in AGENT_BLOCKS if b.not_run], "every block of docs/AGENTS.md must run"
    assert "docs/AGENTS.md" in README.read_text(encoding="utf-8"), "README.md links the agent guide"


@pytest.mark.parametrize("block", AGENT_BLOCKS, ids=[f"docs/AGENTS.md:{b.line}" for b in AGENT_BLOCKS])
def test_agent_guide_block_runs_from_an_empty_directory(block: Block, tmp_path: Path) -> None:
    run_block("docs/AGENTS.md", block, tmp_path)


def test_sample_path_is_the_packaged_file_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = sample_path()
    assert path.is_absolute() and path.is_file()
    assert path.name == "sample_conversation.json" and path.parent.name == "data"
    assert [data_path(name).name for name in DATA_FILES] == list(DATA_FILES)
    with pytest.raises(InvalidInputError, match="not a shipped data file"):
        data_path("../pyproject.toml")
