"""The research export: every table as JSON lines, CSV or Parquet, plus ``manifest.json``.

* :mod:`arena.export.spec`: how a table is described (columns, kinds, the query);
* :mod:`arena.export.slices`: which rows a slice (cohorts, families, times) keeps;
* :mod:`arena.export.tables`: what each exported table holds;
* :mod:`arena.export.writer`: streams the tables into files;
* :mod:`arena.export.directory`: the export directory (atomic publishing, the manifest and
  its checksums).

Nothing is imported here: pyarrow loads only with the writer, when an export is written.
"""

FORMATS = ("jsonl", "csv", "parquet")
"""The file formats of an export (``arena export --format``)."""
