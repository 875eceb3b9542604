"""The published dataset (``arena publish DIR``) and its check (``arena verify DIR``).

* :mod:`arena.publish.dataset`: writes the dataset: tables, chain, commitments, public key,
  manifest; incremental (only changed files are replaced; every version's manifest is kept).
"""
