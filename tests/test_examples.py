"""The examples run end to end: in process over the fake embedder (fast; the chatbot reopens its
on-disk memory, as after a restart), and, marked ``slow``, as the README runs them: separate
``python -m examples.NAME`` processes over the packaged MiniLM."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings

from examples import chatbot, langgraph_agent, locomo_replay, rag_chain

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
CITED = re.compile(r"\[([^|\]]+) \| ([^|\]]+) \| (\d{4}-\d{2}-\d{2})\]")


def test_chatbot_remembers_across_sessions_and_restarts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = unique_namespace("alice")
    base = ["--user", user, "--data-dir", str(tmp_path)]
    assert chatbot.main([*base, "--say", "My dog is called Rex.", "--say", "I work as a nurse in Leeds."],
                        embeddings=FakeEmbeddings()) == 0
    first = capsys.readouterr().out
    assert "STAND-IN" in first and f"session 1 for {user!r} (0 turns remembered" in first
    # A new memory object over the same directory: the restart.
    assert chatbot.main([*base, "--say", "What is my dog called?", "--say", "Where do I work?"],
                        embeddings=FakeEmbeddings()) == 0
    second = capsys.readouterr().out
    assert f"session 2 for {user!r} (2 turns remembered" in second  # the stand-in's "Noted." is filler, not stored
    answers = [line for line in second.splitlines() if line.startswith("bot> ")]
    assert answers[0].startswith("bot> From memory: My dog is called Rex. [")
    assert answers[1].startswith("bot> From memory: I work as a nurse in Leeds. [")
    assert all(CITED.search(a) for a in answers)
    # Another user shares nothing.
    assert chatbot.main(["--user", unique_namespace("bob"), "--data-dir", str(tmp_path), "--say", "What is my dog called?"],
                        embeddings=FakeEmbeddings()) == 0
    assert "bot> I don't have anything in memory about that." in capsys.readouterr().out
    assert chatbot.main([*base, "--forget", "--say", "What is my dog called?"], embeddings=FakeEmbeddings()) == 0
    assert "bot> I don't have anything in memory about that." in capsys.readouterr().out


def test_chatbot_takes_any_user_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--user", "auth0|" + unique_namespace("x"), "--data-dir", str(tmp_path)]
    assert chatbot.main([*base, "--say", "My dog is called Rex."], embeddings=FakeEmbeddings()) == 0
    assert chatbot.main([*base, "--say", "What is my dog called?"], embeddings=FakeEmbeddings()) == 0
    assert "bot> From memory: My dog is called Rex. [" in capsys.readouterr().out


@pytest.mark.parametrize("mode", ["tools", "graph"])
def test_langgraph_agent_example(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    user = unique_namespace("agent")
    argv = ["--mode", mode, "--user", user, "--ask", "What is Leo allergic to?",
            "--ask", "Remember that Leo's birthday is on 3 June.", "--ask", "When is Leo's birthday?"]
    assert langgraph_agent.main(argv, embeddings=FakeEmbeddings()) == 0
    out = capsys.readouterr().out
    answers = [line for line in out.splitlines() if line.startswith("agent> ")]
    assert "allergic to shellfish" in answers[0] and "[D1:18 | Leo | 2023-03-14]" in answers[0]
    if mode == "tools":
        assert "tool call: search_memory({'query': 'What is Leo allergic to?'})" in out
        assert "tool call: remember({'text': \"Leo's birthday is on 3 June.\"})" in out
        assert "Leo's birthday is on 3 June." in answers[2]  # found again through search_memory
    else:
        # The operator loop is the recall step; the statement stays in the thread's history (the
        # stand-in reads only the injected evidence, so it does not answer from history).
        assert "operator loop grounded: ['D1:18'" in out
        assert "memory of" in out and len(answers) == 3


def test_rag_chain_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert rag_chain.main(["--ask", "What is Maya's favourite book?"], embeddings=FakeEmbeddings()) == 0
    out = capsys.readouterr().out
    assert "A: From memory: I'm rereading Piranesi by Susanna Clarke" in out and "[D3:7 | Maya | 2023-04-09]" in out
    assert rag_chain.main(["--tool", "--ask", "Leo allergic shellfish"], embeddings=FakeEmbeddings()) == 0
    assert "search_memory('Leo allergic shellfish') ->\n[D1:18 | Leo | 2023-03-14]" in capsys.readouterr().out


def test_locomo_replay_example_on_the_bundled_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert locomo_replay.main(["--ask", "What is Leo allergic to?", "--qa", "1"], embeddings=FakeEmbeddings()) == 0
    out = capsys.readouterr().out
    assert "replayed demo-1: 105 turns of Maya & Leo in 6 sessions" in out
    assert "A: From memory: You know I can't, I'm allergic to shellfish." in out
    assert "expected: 27 March 2023   gold evidence ['D2:1'] retrieved: yes" in out
    assert locomo_replay.main(["--conversation", "nope"], embeddings=FakeEmbeddings()) == 2
    assert "no conversation 'nope'" in capsys.readouterr().err


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present at ../shared/data")
def test_locomo_replay_example_on_real_locomo(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--data", str(LOCOMO), "--conversation", "conv-26", "--mode", "graph",
            "--ask", "When did Caroline go to the LGBTQ support group?"]
    assert locomo_replay.main(argv, embeddings=FakeEmbeddings()) == 0
    out = capsys.readouterr().out
    assert "replayed conv-26: 419 turns of Caroline & Melanie in 19 sessions" in out
    assert "[D1:3 | Caroline | 2023-05-08] I went to a LGBTQ support group yesterday" in out


def _run(args: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    env.pop("LMC_CHAT_MODEL", None)
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow  # two processes loading torch and MiniLM: ~20 s on an idle laptop, minutes on a busy box
def test_chatbot_readme_commands_in_two_processes_with_minilm(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "mem")]
    _run(["examples.chatbot", "--user", "alice", *data, "--say", "My dog is called Rex."], tmp_path)
    out = _run(["examples.chatbot", "--user", "alice", *data, "--say", "What is my dog called?"], tmp_path)
    assert "session 2 for 'alice' (2 turns remembered" in out
    assert re.search(r"bot> From memory: My dog is called Rex\. \[[^|\]]+ \| user \| \d{4}-\d{2}-\d{2}\]", out), out


@pytest.mark.slow
def test_locomo_replay_readme_command_with_minilm(tmp_path: Path) -> None:
    out = _run(["examples.locomo_replay", "--ask", "What is Leo allergic to?", "--qa", "3"], tmp_path)
    assert "[D1:18 | Leo | 2023-03-14]" in out and out.count("retrieved: yes") >= 2
