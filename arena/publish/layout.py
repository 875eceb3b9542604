"""The file names of a published dataset, in one place: what ``arena publish`` writes and
``arena verify`` reads (the dataset card lists them for readers)."""

from __future__ import annotations

from arena.config import COMMITMENTS_FILE

MANIFEST = "manifest.json"
MANIFESTS_DIR = "manifests"  # every earlier version's manifest
TABLES_DIR = "tables"
CHAIN = "chain.jsonl"
COMMITMENTS = COMMITMENTS_FILE  # the name a file or git anchor writes too
PUBLIC_KEY = "public_key.pem"
LEADERBOARD = "leaderboard.json"
REPORT = "analysis/report.json"
INCIDENTS = "incidents.jsonl"
INCIDENT_SUMMARY = "analysis/incidents.json"
SITE = "site"  # the static copy of the dashboard
