"""The forms and the pager as a browser sends them: a field left at its default arrives blank
(``?cohort=``, ``?status=&category=``), and means "not given", never a bad request."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

MARKET_LINK = re.compile(r'href="/markets/(\d+)"')
OLDER = re.compile(r'<a href="([^"]+)">older &rarr;</a>')
TOTAL = re.compile(r"<small>(\d+) matching</small>")


@pytest.mark.parametrize(
    "path",
    [
        "/?cohort=",  # "all cohorts" on the home page
        "/markets?q=&status=&category=&sort=volume",  # the market form left at "any"
        "/markets?status=&category=&held=",
        "/api/v1/leaderboard?cohort=",
        "/api/v1/markets?status=&category=&q=",
    ],
)
def test_a_form_left_at_its_defaults_answers_200(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:300]


def test_a_blank_value_means_not_given(client: TestClient) -> None:
    """The page with blank fields is the page without them."""
    assert client.get("/markets?status=&category=&q=").text == client.get("/markets").text


def test_the_pager_reaches_every_market(client: TestClient) -> None:
    """Following "older →" from the market list reaches every market the list counts."""
    page = client.get("/markets")
    assert page.status_code == 200
    total = int(TOTAL.search(page.text).group(1))  # type: ignore[union-attr]
    seen: set[str] = set()
    while True:
        seen.update(MARKET_LINK.findall(page.text))
        older = OLDER.search(page.text)
        if older is None:
            break
        page = client.get(unescape(older.group(1)))
        assert page.status_code == 200, older.group(1)
    assert total > 50 and len(seen) == total
