"""How well the question readers of ``langmem_cog/rank/questions.py`` read questions written apart from the rules.

The attribution-and-currency set's questions are few and the rules were written on its dev half, so this
reads two sets of questions written for this check alone (``benchmarks/data/questions``; how they were
written: docs/BENCHMARKS.md), each split once into a ``fit`` half (read while changing the rules) and a
``check`` half (scored, never read for a rule):

- ``belief_record.json``: belief questions (where one named person stands: "Is Kavya nervous about ...",
  with ``holder``) and record questions (a fact or event). Scores :func:`stance_holder`: belief questions
  whose holder it finds, record questions it gives a holder (it should give none).
- ``belief_record_fresh.json``: 400 more of the same kinds, written after every rule change of 2026-12-08,
  all ``check``.
- ``state.json``: questions about a person's state of life (home, job, school, vehicle, diet, relationship,
  pet, habit) now, before or at a time, and near misses (``slot`` ``"none"``). Scores
  :func:`asked_state` (the state named, for the slots it reads; no state for the near misses) and
  :func:`~langmem_cog.rank.cascade.asked_tense` (now or before as the cascade reads it, for the questions
  that ask one).

The names a question holds stand for the conversation's speakers (capitalised words other than the first).

Usage::

    python benchmarks/question_reading.py            # both halves
    python benchmarks/question_reading.py --show fit # and the fit half's misses
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from langmem_cog.rank.cascade import asked_tense
from langmem_cog.rank.questions import asked_state, stance_holder

DATA = Path(__file__).parent / "data" / "questions"
_NAME = re.compile(r"(?<!^)\b[A-Z][a-z]+(?:-[a-z]+)?\b")
# The slots of the state set, by the first state predicate asked_state gives for each.
SLOTS = {"residence": "lives_in", "job": "works_at", "school": "studies", "vehicle": "drives", "diet": "diet",
         "relationship": "relationship", "pet": "keeps_pet", "habit": "habit"}


def names(question: str, *known: str | None) -> list[str]:
    """The names a question holds (``known`` first): its capitalised words but the first."""
    return list(dict.fromkeys([k for k in known if k] + _NAME.findall(question)))


def belief_record(rows: list[dict], show: bool) -> str:
    found = wrong = beliefs = records = 0
    for row in rows:
        holder = stance_holder(row["q"], names(row["q"], row["holder"]))
        if row["kind"] == "belief":
            beliefs += 1
            hit = holder == row["holder"].lower()
            found += hit
        else:
            records += 1
            hit = holder is None
            wrong += not hit
        if show and not hit:
            print(f"  {row['kind']:<7} holder {holder!s:<8} | {row['q']}")
    return f"belief questions with their holder {found}/{beliefs}, record questions given a holder {wrong}/{records}"


def state(rows: list[dict], show: bool) -> str:
    slot_ok = slot_n = none_ok = none_n = tense_ok = tense_n = 0
    for row in rows:
        got = asked_state(row["q"])
        if row["slot"] == "none":
            none_n += 1
            hit = got is None
            none_ok += hit
        else:
            slot_n += 1
            hit = got is not None and got[0] == SLOTS[row["slot"]]
            slot_ok += hit
        if row["tense"] in ("now", "before") and row["slot"] != "none":
            tense_n += 1
            tense = asked_tense(row["q"], stance_holder(row["q"], names(row["q"], row["subject"])), windowed=False)
            tense_ok += tense == row["tense"]
            if show and tense != row["tense"]:
                print(f"  tense {tense!s:<6} want {row['tense']:<6} | {row['q']}")
        if show and not hit:
            print(f"  state {got!s:<18} want {row['slot']:<12} | {row['q']}")
    return (f"state named {slot_ok}/{slot_n}, "
            f"near misses with no state {none_ok}/{none_n}, now/before read {tense_ok}/{tense_n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", choices=["fit", "check"], help="print that half's misses")
    args = parser.parse_args()
    for name, score in (("belief_record.json", belief_record), ("belief_record_fresh.json", belief_record),
                        ("state.json", state)):
        path = DATA / name
        if not path.exists():
            continue
        rows = json.loads(path.read_text(encoding="utf-8"))
        for half in ("fit", "check"):
            part = [r for r in rows if r["half"] == half]
            if not part:
                continue
            print(f"{name} {half} ({len(part)} questions): {score(part, args.show == half)}")


if __name__ == "__main__":
    main()
