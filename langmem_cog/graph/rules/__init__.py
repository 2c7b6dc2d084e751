"""The rule-based PEC2F extractor: regular expressions, lexicons and VADER, no model.

Import :class:`RuleExtractor` and :func:`is_chitchat` from here; the rules are described
in :mod:`langmem_cog.graph.rules.extractor`. The modules of the package:

* :mod:`~langmem_cog.graph.rules.extractor` -- :class:`RuleExtractor` (the batch pre-scan
  of names and pets, each turn's addressee, the pipeline of one turn) and :func:`is_chitchat`;
* :mod:`~langmem_cog.graph.rules.entities` -- the entity stage (``EntityStage``): persons
  and concepts;
* :mod:`~langmem_cog.graph.rules.statements` -- the statement stage (``StatementStage``):
  events, facts and claims; it reads the facts with
  :mod:`~langmem_cog.graph.rules.facts` and the claims with
  :mod:`~langmem_cog.graph.rules.claims`;
* :mod:`~langmem_cog.graph.rules.mentions` -- what a span of a turn mentions (its time
  expression, the noun phrase or subject at a position, the referent of a pronoun), for
  the statement stage;
* :mod:`~langmem_cog.graph.rules.context` -- the per-turn working state the stages share
  (``TurnContext``);
* :mod:`~langmem_cog.graph.rules.phrases` -- the noun-phrase reader both stages use;
* :mod:`~langmem_cog.graph.rules.text` -- self-contained text helpers (sentences, clauses,
  lemmas, VADER sentiment, the time pre-gate);
* :mod:`~langmem_cog.graph.rules.lexicon` -- word lists, gazetteers and compiled patterns
  (data only).
"""

from langmem_cog.graph.rules.extractor import RuleExtractor, is_chitchat

__all__ = ["RuleExtractor", "is_chitchat"]
