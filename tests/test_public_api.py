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
    assert issubclass(errors.StoreError, RuntimeError)
    assert issubclass(errors.UnknownNamespaceError, LookupError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.LangMemCogError)
