"""``arena publish``: the versioned, self-contained dataset, and the static copy of the dashboard
inside it (:mod:`arena.publish.site`)."""
