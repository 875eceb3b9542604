"""Calibration: bins, ECE, Murphy decomposition, the reliability diagram."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.analytics.calibration import bin_index, calibrate, calibration_figure, plot_calibration


def test_calibration_by_hand() -> None:
    p = np.array([0.1, 0.15, 0.8, 0.9, 1.0])
    o = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    result = calibrate(p, o, n_bins=2)
    # bin [0, .5): forecasts .1 .15 -> mean .125, observed 1/2
    # bin [.5, 1]: forecasts .8 .9 1.0 -> mean .9, observed 2/3
    low, high = result.bins
    assert low == {
        "low": 0.0,
        "high": 0.5,
        "count": 2,
        "mean_forecast": pytest.approx(0.125),
        "observed_frequency": 0.5,
    }
    assert high["count"] == 3
    assert high["mean_forecast"] == pytest.approx(0.9)
    assert high["observed_frequency"] == pytest.approx(2 / 3)
    # ECE = 2/5 * |.125 - .5| + 3/5 * |.9 - .6667| = .15 + .14 = .29
    assert result.ece == pytest.approx(0.4 * 0.375 + 0.6 * (0.9 - 2 / 3))
    # base rate 3/5: UNC = .6 * .4 = .24
    assert result.uncertainty == pytest.approx(0.24)
    # REL = (2 * .375^2 + 3 * (.2333)^2) / 5; RES = (2 * (.5-.6)^2 + 3 * (.6667-.6)^2) / 5
    assert result.reliability == pytest.approx((2 * 0.375**2 + 3 * (0.9 - 2 / 3) ** 2) / 5)
    assert result.resolution == pytest.approx((2 * 0.1**2 + 3 * (2 / 3 - 0.6) ** 2) / 5)
    assert result.brier == pytest.approx(np.mean((p - o) ** 2))


def test_edges_of_the_bins() -> None:
    assert bin_index(np.array([0.0, 0.0999, 0.1, 0.5, 0.9999, 1.0]), 10).tolist() == [
        0,
        0,
        1,
        5,
        9,
        9,
    ]


@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.booleans()),
        min_size=1,
        max_size=200,
    ),
    st.integers(min_value=1, max_value=20),
)
def test_decomposition_identity(pairs: list[tuple[float, bool]], n_bins: int) -> None:
    p = np.array([x for x, _ in pairs])
    o = np.array([float(y) for _, y in pairs])
    result = calibrate(p, o, n_bins=n_bins)
    assert result.reliability - result.resolution + result.uncertainty == pytest.approx(
        result.binned_brier, abs=1e-12
    )
    assert result.reliability >= 0
    assert result.resolution >= 0
    assert 0 <= result.ece <= 1
    assert sum(b["count"] for b in result.bins) == len(pairs)


@given(st.lists(st.booleans(), min_size=1, max_size=50))
def test_identity_is_the_raw_brier_when_each_bin_holds_one_value(outcomes: list[bool]) -> None:
    o = np.array(outcomes, dtype=float)
    p = np.where(np.arange(len(o)) % 2 == 0, 0.25, 0.75)  # two distinct values, two bins
    result = calibrate(p, o, n_bins=2)
    assert result.binned_brier == pytest.approx(result.brier)


def test_empty_input() -> None:
    result = calibrate(np.array([]), np.array([]), forecaster="nobody")
    assert result.n == 0
    assert result.bins == []


def test_plot_writes_a_png(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    p = rng.random(300)
    results = [
        calibrate(p, (rng.random(300) < p).astype(float), forecaster="good"),
        calibrate(p, (rng.random(300) < 0.5).astype(float), forecaster="noise"),
    ]
    path = plot_calibration(results, tmp_path / "plots" / "calibration.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plots_legend_is_below_the_data_and_perfect_stands_apart() -> None:
    """The legend sits outside the axes (it covered the data), and no forecaster's line has
    the diagonal's colour or any grey (one family's grey line matched the grey "perfect")."""
    from matplotlib.colors import to_rgb

    rng = np.random.default_rng(1)
    p = rng.random(200)
    results = [
        calibrate(p, (rng.random(200) < p).astype(float), forecaster=f"family-{i}")
        for i in range(12)
    ]
    figure = calibration_figure(results)
    figure.draw_without_rendering()
    (axes,) = figure.axes
    legends = [*figure.legends, *([axes.get_legend()] if axes.get_legend() else [])]
    assert len(legends) == 1
    legend_box = legends[0].get_window_extent()
    assert not legend_box.overlaps(axes.get_window_extent())
    assert legend_box.y1 <= axes.get_window_extent().y0  # below the axes
    assert legend_box.y0 >= 0 and legend_box.x0 >= 0  # and inside the picture
    lines = {line.get_label(): line for line in axes.get_lines()}
    perfect = lines.pop("perfect")
    assert to_rgb(perfect.get_color()) == (0.0, 0.0, 0.0)
    assert perfect.get_linestyle() == "--"
    colors = [to_rgb(line.get_color()) for line in lines.values()]
    assert len(colors) == 12 == len(set(colors))
    for r, g, b in colors:
        assert max(r, g, b) - min(r, g, b) > 0.1, (r, g, b)  # not a grey, nor black
        assert all(line.get_linestyle() == "-" for line in lines.values())
