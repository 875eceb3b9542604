"""The verifiable record (METHODOLOGY.md, "A record anyone can verify").

* :mod:`arena.record.canonical`: canonical JSON (RFC 8785) and the chain's hash;
* :mod:`arena.record.records`: what each record holds, built from export rows, so the writer
  (from the database) and ``arena verify`` (from a published dataset) build the same bytes;
* :mod:`arena.record.chain`: appending records in the transaction of what they record, and the
  genesis pass that chains what was stored before the chain existed.

Pure modules import nothing from the database; :mod:`arena.record.chain` is the only one that
does.
"""
