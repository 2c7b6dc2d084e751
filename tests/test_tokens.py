"""Tests of offline token counting: seeding tiktoken's cache from the packaged cl100k_base file."""

from __future__ import annotations

import hashlib

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry

from langmem_cog import tokens
from langmem_cog.tokens import CL100K_SHA256, CL100K_URL, count_tokens, seed_tiktoken_cache

CACHE_NAME = hashlib.sha1(CL100K_URL.encode()).hexdigest()


@pytest.fixture
def offline(monkeypatch):
    """No network, no encoding already loaded in this process, a fresh lru_cache."""

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"tiktoken tried to download {blobpath}")
        with open(blobpath, "rb") as fh:
            return fh.read()

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    tokens.get_encoding.cache_clear()
    yield
    tokens.get_encoding.cache_clear()
    tiktoken.registry.ENCODINGS.pop("cl100k_base", None)  # loaded from a tmp dir: drop it


def test_seed_writes_the_file_and_tiktoken_loads_offline(offline, monkeypatch, tmp_path):
    cache = tmp_path / "tk-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    path = seed_tiktoken_cache()
    assert path == cache / CACHE_NAME
    assert hashlib.sha256(path.read_bytes()).hexdigest() == CL100K_SHA256
    assert [p.name for p in cache.iterdir()] == [CACHE_NAME]  # no temporary file left

    enc = tiktoken.get_encoding("cl100k_base")
    assert enc.encode("hello world") == [15339, 1917]
    assert count_tokens("hello world") == 2


def test_count_tokens_seeds_by_itself(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert count_tokens("hello world") == 2
    assert (tmp_path / CACHE_NAME).exists()


def test_seed_is_idempotent(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    first = seed_tiktoken_cache()
    mtime = first.stat().st_mtime_ns
    assert seed_tiktoken_cache() == first
    assert first.stat().st_mtime_ns == mtime


def test_seed_replaces_a_corrupt_cache_file(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / CACHE_NAME).write_bytes(b"truncated download")
    path = seed_tiktoken_cache()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == CL100K_SHA256
    assert tiktoken.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


def test_data_gym_cache_dir_is_honoured(offline, monkeypatch, tmp_path):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path))
    assert seed_tiktoken_cache() == tmp_path / CACHE_NAME


def test_disabled_cache_still_counts_offline(offline, monkeypatch, tmp_path):
    # TIKTOKEN_CACHE_DIR="" turns tiktoken's cache off: nothing to seed, nothing written to cwd.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert count_tokens("hello world") == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "n"), [("", 0), ("hello", 1), ("hello world", 2), ("<|endoftext|>", 7)]
)
def test_count_tokens(text, n):
    # special tokens are counted as plain text, never rejected
    assert count_tokens(text) == n
