"""The retrieval cascade after raw and graph candidates: features, fusion, cross-encoder rerank."""
