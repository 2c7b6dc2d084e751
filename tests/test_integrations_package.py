"""The integrations are a subpackage of ``langmem_cog``: ``langmem_cog.integrations.langgraph`` and
``langmem_cog.integrations.langchain`` expose their public names, an application's own ``integrations``
package neither shadows them nor is shadowed by them, and the wheel installs no top-level package but
``langmem_cog``."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import langmem_cog

ROOT = Path(langmem_cog.__file__).resolve().parents[1]

PUBLIC = {
    "langmem_cog.integrations.langgraph": [
        "CogMemStore",
        "CogMemoryMiddleware",
        "MemoryContext",
        "build_memory_agent_graph",
        "create_memory_tools",
        "namespace_from_context",
        "remember_text",
    ],
    "langmem_cog.integrations.langchain": [
        "CitedDocumentPrompt",
        "RAG_PROMPT",
        "create_memory_retriever_tool",
        "create_rag_chain",
    ],
    "langmem_cog.integrations.offline": ["CHAT_MODEL_ENV", "NO_MEMORY_ANSWER", "OfflineEvidenceChatModel",
                                         "load_chat_model"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_the_integrations_expose_their_public_names(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(PUBLIC[module])
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


def test_the_subpackages_and_their_names_resolve_to_the_same_objects() -> None:
    from langmem_cog.integrations.evidence import format_evidence, search_evidence
    from langmem_cog.integrations.langchain import create_rag_chain
    from langmem_cog.integrations.langchain.rag import create_rag_chain as rag_create_rag_chain
    from langmem_cog.integrations.langgraph import CogMemoryMiddleware, CogMemStore
    from langmem_cog.integrations.langgraph.middleware import CogMemoryMiddleware as middleware_class
    from langmem_cog.integrations.langgraph.store import CogMemStore as store_class

    assert CogMemoryMiddleware is middleware_class
    assert CogMemStore is store_class
    assert create_rag_chain is rag_create_rag_chain
    assert callable(format_evidence) and callable(search_evidence)
    assert CogMemoryMiddleware.__module__ == "langmem_cog.integrations.langgraph.middleware"


def test_importing_the_library_does_not_import_the_integrations() -> None:
    """``import langmem_cog`` stays free of the agent packages; the integrations load on demand."""
    code = "import sys, langmem_cog; print(sorted(m for m in sys.modules if m.startswith('langmem_cog.integrations')))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


APP_SCRIPT = """\
import json
import sys

from langmem_cog.integrations.langgraph import CogMemoryMiddleware, CogMemStore, create_memory_tools
from langmem_cog.integrations.langchain import create_rag_chain
import langmem_cog.integrations as ours

taken_before_app = "integrations" in sys.modules
import integrations
from integrations.langgraph import APP_LANGGRAPH

print(json.dumps({
    "ours": ours.__file__,
    "middleware": CogMemoryMiddleware.__module__,
    "store": CogMemStore.__module__,
    "tools": create_memory_tools.__module__,
    "rag": create_rag_chain.__module__,
    "taken_before_app": taken_before_app,
    "app": integrations.__file__,
    "app_marker": integrations.APP_MARKER,
    "app_langgraph": APP_LANGGRAPH,
}))
"""


def test_an_app_folder_named_integrations_does_not_shadow_ours(tmp_path: Path) -> None:
    """An application with its own ``integrations/`` package (first on ``sys.path``, the current directory)
    imports both its own package and ours."""
    app = tmp_path / "integrations"
    (app / "langgraph").mkdir(parents=True)
    (app / "__init__.py").write_text('APP_MARKER = "the app\'s own integrations"\n', encoding="utf-8")
    (app / "langgraph" / "__init__.py").write_text('APP_LANGGRAPH = "the app\'s langgraph glue"\n', encoding="utf-8")
    (tmp_path / "app.py").write_text(APP_SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's langmem_cog, after the app's directory

    proc = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["ours"]).resolve() == ROOT / "langmem_cog" / "integrations" / "__init__.py"
    assert out["middleware"] == "langmem_cog.integrations.langgraph.middleware"
    assert out["store"] == "langmem_cog.integrations.langgraph.store"
    assert out["tools"] == "langmem_cog.integrations.langgraph.tools"
    assert out["rag"] == "langmem_cog.integrations.langchain.rag"
    assert out["taken_before_app"] is False  # ours never occupies the top-level name
    assert Path(out["app"]).resolve() == (app / "__init__.py").resolve()
    assert out["app_marker"] == "the app's own integrations"
    assert out["app_langgraph"] == "the app's langgraph glue"


def test_the_checkout_has_no_top_level_integrations_package() -> None:
    assert not (ROOT / "integrations").exists()
    assert (ROOT / "langmem_cog" / "integrations" / "langgraph" / "__init__.py").is_file()


def test_the_wheel_installs_only_the_langmem_cog_package(tmp_path: Path) -> None:
    """Built with the project's backend (hatchling, through its PEP 517 hook), the wheel holds
    ``langmem_cog`` (the integrations and ``py.typed`` inside it) and its metadata, nothing else."""
    pytest.importorskip("hatchling", reason="hatchling (the build backend, in the dev extra) is not installed")
    out = tmp_path / "dist"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    wheel = out / proc.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(wheel).namelist()

    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"langmem_cog"}
    assert not [n for n in names if n.startswith("integrations/")]
    for expected in ("langmem_cog/py.typed", "langmem_cog/integrations/__init__.py",
                     "langmem_cog/integrations/evidence.py", "langmem_cog/integrations/offline.py",
                     "langmem_cog/integrations/langgraph/__init__.py",
                     "langmem_cog/integrations/langgraph/middleware.py",
                     "langmem_cog/integrations/langchain/__init__.py"):
        assert expected in names, expected
    assert not [n for n in names if n.endswith(".pth")]
