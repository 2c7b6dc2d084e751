"""The public surface is small and pinned."""

import langmem_cog


def test_all_is_pinned() -> None:
    assert sorted(langmem_cog.__all__) == [
        "CogMemConfig",
        "CogMemRetriever",
        "CogMemory",
        "LangMemCogError",
        "Turn",
        "TurnStore",
        "load_locomo",
        "load_longmemeval",
        "make_turn",
        "turns_from_messages",
    ]
    for name in langmem_cog.__all__:
        assert getattr(langmem_cog, name) is not None


def test_errors_inherit_builtins() -> None:
    from langmem_cog import errors

    assert issubclass(errors.InvalidInputError, ValueError)
    assert issubclass(errors.ModelNotFoundError, FileNotFoundError)
    assert issubclass(errors.DamagedModelError, ValueError)
    assert issubclass(errors.StoreError, RuntimeError)
    assert issubclass(errors.ResourceLimitError, errors.StoreError)
    assert issubclass(errors.UnknownNamespaceError, LookupError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.LangMemCogError)


def test_only_the_cli_imports_the_benchmarks() -> None:
    """The library never depends on ``bench/`` (the benchmarks and the training of the shipped models build on
    the library, not the other way round), at module level or inside a function."""
    import ast
    from pathlib import Path

    root = Path(langmem_cog.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("bench/", "cli/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{rel}:{node.lineno} {n}" for n in names if n.startswith("langmem_cog.bench")]
    assert offenders == []


def test_the_core_never_imports_the_integrations() -> None:
    """``langmem_cog.integrations`` builds on the core (retriever, memory, store, records, errors); no module
    outside it imports it, at module level or inside a function, so ``import langmem_cog`` needs no agent
    framework beyond ``langchain-core`` and ``langgraph``."""
    import ast
    from pathlib import Path

    root = Path(langmem_cog.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("integrations/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [])
            offenders += [f"{rel}:{node.lineno} {n}" for n in names
                          if n.startswith(("langmem_cog.integrations", "integrations"))]
    assert offenders == []


def test_no_function_of_bench_or_rank_takes_more_than_eight_parameters() -> None:
    """Settings travel in small frozen objects (``Recipe``, ``CascadeFit``, ``ScaleWorkload``, ``LmeSelection``),
    not in long parameter lists (``self`` / ``cls`` not counted)."""
    import ast
    from pathlib import Path

    root = Path(langmem_cog.__file__).parent
    long = []
    for package in ("bench", "rank"):
        for path in sorted((root / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    a = node.args
                    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x]
                    n = len([x for x in names if x not in ("self", "cls")])
                    if n > 8:
                        long.append(f"{package}/{path.name}:{node.lineno} {node.name} ({n})")
    assert long == []


def test_each_module_of_the_cli_stays_under_600_lines() -> None:
    """``langmem_cog/cli/`` is one module per command group, each registering its own subcommands
    (``add_parsers``), with what they share in ``_common.py``; none of them grows past 600 lines."""
    from pathlib import Path

    root = Path(langmem_cog.__file__).parent / "cli"
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in sorted(root.glob("*.py"))}
    assert {"__init__.py", "__main__.py", "_common.py"} <= set(sizes)
    assert {name: n for name, n in sizes.items() if n > 600} == {}


def test_no_import_cycle_among_library_modules() -> None:
    """No two library modules import each other, directly or through others: imports inside functions and
    under ``TYPE_CHECKING`` count too (a dependency they hide is still a dependency). Imports of a module's
    own package (``from langmem_cog import timeparse``) are not edges."""
    import ast
    from pathlib import Path

    import networkx as nx

    root = Path(langmem_cog.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = ("langmem_cog", *path.relative_to(root).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name in modules]
        base = node.module or ""
        if node.level:
            package = module.split(".") if modules[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
                if f"{base}.{a.name}" in modules or base in modules]

    G = nx.DiGraph()
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                G.add_edges_from((module, t) for t in targets(module, node)
                                 if t != module and not module.startswith(t + "."))
    assert sorted(sorted(c) for c in nx.simple_cycles(G)) == []
