"""PEC2F typed graph memory: schema, extraction, graph store, reconciliation, consolidation."""
