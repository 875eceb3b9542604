"""The published dataset: ``arena publish`` writes it, ``arena verify`` checks it with no
database (:mod:`arena.publish.verify`)."""
