"""The family page's calibration diagram (an SVG drawn on the server): numbered axes with
titles, and every point drawn whole, the ones at 0 and 1 too (on both databases)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from fastapi.testclient import TestClient

SVG = "{http://www.w3.org/2000/svg}"
TICKS = ["0", "0.25", "0.5", "0.75", "1"]


def _diagram(html: str) -> ET.Element:
    found = re.search(r"<svg[^>]*aria-label=\"Calibration diagram.*?</svg>", html, re.S)
    assert found, "no calibration diagram"
    svg = found.group(0).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1)
    return ET.fromstring(svg)


def test_the_calibration_diagram_has_numbered_axes_and_whole_points(client: TestClient) -> None:
    families = [row["family_id"] for row in client.get("/api/v1/leaderboard").json()]
    at_the_edge = 0
    for fid in families:
        response = client.get(f"/families/{fid}")
        assert response.status_code == 200
        svg = _diagram(response.text)
        x0, y0, width, height = (float(v) for v in svg.attrib["viewBox"].split())
        texts = [t.text for t in svg.iter(f"{SVG}text")]
        ticks = [t.text for t in svg.iter(f"{SVG}text") if "tick" in t.attrib.get("class", "")]
        assert sorted(ticks) == sorted(TICKS * 2), fid  # both axes, 0 to 1 by quarters
        assert "stake / max bet" in texts and "share won" in texts
        bins = client.get(f"/api/v1/families/{fid}").json()["calibration"]
        circles = list(svg.iter(f"{SVG}circle"))
        assert len(circles) == sum(1 for b in bins if b["n"])
        for circle in circles:
            cx, cy, r = (float(circle.attrib[k]) for k in ("cx", "cy", "r"))
            assert x0 <= cx - r and cx + r <= x0 + width, (fid, cx, r)
            assert y0 <= cy - r and cy + r <= y0 + height, (fid, cy, r)
        at_the_edge += sum(1 for b in bins if b["n"] and b["observed"] in (0, 1))
    assert at_the_edge  # the data has points at 0 or 1, the ones that were clipped
