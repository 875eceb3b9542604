"""The published dataset (``arena publish DIR``) and its check (``arena verify DIR``).

* :mod:`arena.publish.dataset`: writes the dataset: tables, chain, commitments, public key,
  manifest; incremental (only changed files are replaced; every version's manifest is kept).
* :mod:`arena.publish.site`: the static copy of the dashboard under ``DIR/site/``, rendered by
  the web app in-process (:mod:`arena.publish.static_html` makes each page static).
* :mod:`arena.publish.parts`: what ``arena publish`` adds: the leaderboard and analysis
  (:mod:`arena.publish.analysis`), the incident log (:mod:`arena.publish.incidents`) and the
  card (:mod:`arena.publish.card`).
* :mod:`arena.publish.verify`: checks a dataset with no database: files, chain, records rebuilt
  from the tables (:mod:`arena.publish.rebuild`, :mod:`arena.publish.tables`), commitments,
  timing, and the leaderboard's money (:mod:`arena.publish.standings`).
"""
