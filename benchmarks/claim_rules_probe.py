"""The attribution probe with each claim rule of ``Cascade.rank_pool`` switched off in turn.

``prefer_records`` (a record question about a named person gets that person's turn before someone else's
opinion) and ``prefer_current`` (a "now" belief question gets the CURRENT claim before what it superseded)
act after the rerank. This prints the probe's record and belief H@1 of the default retriever with both
rules, without ``prefer_records``, and without ``prefer_current``:

    OMP_NUM_THREADS=1 python benchmarks/claim_rules_probe.py
"""
import langmem_cog.rank.cascade as cascade
from langmem_cog.bench.probe import run_retriever_probe
from langmem_cog.config import CogMemConfig

RULES = {"prefer_records": cascade.prefer_records, "prefer_current": cascade.prefer_current}


def keep_order(turn_ids, *_):
    return list(turn_ids)


for off in (None, "prefer_records", "prefer_current"):
    for name, rule in RULES.items():
        setattr(cascade, name, keep_order if name == off else rule)
    res = run_retriever_probe(CogMemConfig.preset("ephemeral"), mode="cascade")
    print(f"{'both rules' if off is None else 'without ' + off:<24} record H@1 {res['record_h1']:.3f}  "
          f"belief H@1 {res['belief_h1']:.3f}  ({res['pairs']} pairs)")
