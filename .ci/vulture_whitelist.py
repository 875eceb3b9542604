"""Names vulture cannot see used, because a framework calls or reads them.

Vulture (``[tool.vulture]`` in pyproject.toml, run by .ci/run) reports code nothing refers to.
The decorators listed there (FastAPI routes and handlers, typer commands, pydantic validators,
SQLAlchemy events, pytest fixtures, hypothesis rules) keep their functions alive; this file names
the rest, one line each, with the framework that uses it. Only framework hooks belong here: code
that nothing calls is deleted instead. A name here counts as used wherever it is defined.
"""

# ruff: noqa: B018, F821
# fmt: off
_ = object()

# Python itself
_.__getattr__  # a module's lazy attributes (PEP 562): arena/analytics/__init__.py
_.__dir__  # a module's listing with its lazy attributes (PEP 562): arena/analytics/__init__.py
_._missing_  # enum: looks up a value that is no member (Job's aliases): arena/domain/states.py
_.__signature__  # inspect.signature: the options typer reads: arena/cli/composed.py (with_options)
_.__annotations__  # typing.get_type_hints: the option types typer reads: arena/cli/composed.py
_.handle_starttag  # html.parser.HTMLParser calls it: tests/web/test_numbers_pages.py
_.format_commands  # click calls it to list a group's commands: arena/cli/style.py (ArenaGroup)

# pydantic and pydantic-settings
_.model_config  # pydantic: a model's configuration
_.settings_customise_sources  # pydantic-settings: orders the settings sources
_.get_field_value  # pydantic-settings: a custom source's value for one field
_.dotenv_settings  # pydantic-settings: passed by keyword to settings_customise_sources
_.file_secret_settings  # pydantic-settings: passed by keyword to settings_customise_sources

# SQLAlchemy
_.impl  # TypeDecorator: the column type decorated
_.cache_ok  # TypeDecorator: safe to cache the compiled statement
_.load_dialect_impl  # TypeDecorator: the type per dialect
_.process_bind_param  # TypeDecorator: a value going into the database
_.process_result_value  # TypeDecorator: a value coming out
_.isolation_level  # DBAPI connection attribute set in a connect event (sqlite3, psycopg)
_.market_count  # ORM attribute mapped onto universes.market_count (tests/store/test_schema.py)

# Alembic: module-level names of every revision in arena/resources/migrations/versions
_.down_revision
_.branch_labels
_.depends_on

# http.server and socketserver (the fakes' HTTP servers)
_.do_GET  # BaseHTTPRequestHandler: handles a GET
_.do_POST  # BaseHTTPRequestHandler: handles a POST
_.log_message  # BaseHTTPRequestHandler: silenced
_.protocol_version  # BaseHTTPRequestHandler: HTTP/1.1 keep-alive
_.disable_nagle_algorithm  # StreamRequestHandler: TCP_NODELAY
_.close_connection  # BaseHTTPRequestHandler: ends a keep-alive connection
_.daemon_threads  # ThreadingMixIn: request threads do not block exit
_.block_on_close  # ThreadingMixIn: server_close does not join request threads

# FastAPI, uvicorn and Jinja
_.route_class  # FastAPI APIRouter: the route class of its routes
_.should_exit  # uvicorn Server: set to stop serving
_.tooltip  # read by the Jinja templates (arena/web/templates/leaderboard.html)
_.TEN_MINUTES  # CurveRange member, reached by value from the ?range= query (web/curves.py)
_.HOUR  # CurveRange member, reached by value
_.DAY  # CurveRange member, reached by value
_.MONTH  # CurveRange member, reached by value

# pytest, hypothesis and selenium (the tests)
_.pytestmark  # pytest: a module's marks
_.pytest_collection_modifyitems  # pytest: a conftest hook
_.TestLedger  # pytest: collects the hypothesis state machine's TestCase by its Test* name
_.secret_env  # pytest: a fixture requested by name for its side effect
_.binary_location  # selenium ChromeOptions: the browser binary
_.restore_logging  # pytest: a fixture requested by name for its side effect
_.handle_starttag  # html.parser.HTMLParser calls it: tests/web/test_crawl.py
_.handle_endtag  # html.parser.HTMLParser calls it: tests/web/test_crawl.py
_.handle_data  # html.parser.HTMLParser calls it: tests/web/test_surfaces_agree.py

# dataclasses.asdict: fields that reach the reports' JSON only through it
_.base_rate  # CalibrationReport.to_json (arena/analytics/calibration.py)
_.n_zero  # SignTest, in the head-to-head report's "sign_test" (arena/analytics/report.py)

_.loud  # typer reads it as --loud through with_options: tests/cli/test_composed.py

# the JSON API's response models (arena/web/schemas.py): fields FastAPI serialises by name
_.fees_usd
_.invested
_.mean_confidence
_.interval_status
_.interval_reason
_.adjusted_brier
_.ci_low
_.ci_high
_.bootstrap_low
_.bootstrap_high
_.peer_score
_.n_scored_questions
_.dropped_questions
_.dropped_reason
_.differences
_.decision_markers
_.max_points
_.markdown
_.max_drawdown_pct  # risk and return (/api/v1/risk)
_.mean_weekly_return
_.mean_brier  # replicates (/api/v1/replicates)
_.sd_brier
_.between_variance
_.within_variance
_.icc
_.close_orderings
_.max_drawdown_usd
_.drawdown_hours
_.annualisation
_.min_weeks
_.without_value
# enum members FastAPI offers as query values (arena/web/risk.py: ?by=agent, ?value=exit)
_.AGENT
_.EXIT
_.weekly_return  # TrendRow (the trend's rows)
_.rank_week
_.rank_cumulative
_.rank_by
_.lineage_changed
# calibration in depth: dataclass fields read through asdict()
_.mce
_.ace
_.log_loss
_.spherical
_.overconfidence
# forecasts column for the per-type difficulty fit (AnalysisOptions.fit_by_type)
_.question_type
# the research measures in the JSON API's response models (issue 24)
_.p_rank_1
_.p_top_3
_.rank_low
_.rank_high
_.rank_sample
_.assumptions
_.bin_rule
_.copy_correlation
_.copy_distance
_.copy_questions
_.follows_market
_.mean_forecast
_.more_weeks
_.observed_frequency
_.return_per_dollar
_.return_per_dollar_after_fee
_.weeks_needed

# the category and horizon breakdown (arena/web/breakdown.py, arena/web/schemas.py)
_.LE7  # Horizon member, reached by value from ?horizon=
_.D8TO30  # Horizon member, reached by value
_.GT30  # Horizon member, reached by value
_.HORIZON  # By member, reached by value from ?by=
_.horizon_rule  # Breakdown response model field
