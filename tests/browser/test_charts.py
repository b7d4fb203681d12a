"""The skill page's trend charts in Chromium: readable at 20 and 100 iterations, at a
laptop's and a phone's width, with the breaks where the comparison changes shown."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.browser.conftest import PASSWORD, USERNAME
from tests.factories import eval_magic_iteration

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

CHARTS = ("#chart-score", "#chart-delta", "#chart-invocation", "#chart-cost")
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
#: The plot area a chart keeps whatever its legend and width (static/js/charts.js).
MIN_PLOT_PX = 195


def write_trend(
    root: Path,
    *,
    skill: str,
    iterations: int,
    model_from: int | None = None,
    harness_from: int | None = None,
    revision_from: int | None = None,
    more_evals_from: int | None = None,
) -> None:
    """`iterations` eval-magic iterations of `skill`, an hour apart; from the given
    iteration on, another agent model, another harness, revision mode, a fourth eval."""
    for n in range(1, iterations + 1):
        revision = revision_from is not None and n >= revision_from
        treatment, control = (
            ("new_skill", "old_skill") if revision else ("with_skill", "without_skill")
        )
        evals = ["alpha", "beta", "gamma"]
        if more_evals_from is not None and n >= more_evals_from:
            evals.append("delta")
        cells: dict[tuple[str, str], list[dict[str, bool] | None]] = {}
        for k, eval_id in enumerate(evals):
            cells[eval_id, treatment] = [{"a1": True, "a2": (n + k) % 3 != 0}]
            cells[eval_id, control] = [{"a1": (n + k) % 2 == 0, "a2": False}]
        folder = eval_magic_iteration(
            root,
            skill=skill,
            label=f"iteration-{n}",
            mode="revision" if revision else "new-skill",
            timestamp=(START + timedelta(hours=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            cells=cells,
            conditions=[control, treatment] if revision else [treatment, control],
        )
        recorded = json.loads((folder / "conditions.json").read_text())
        if model_from is not None and n >= model_from:
            recorded["agent_model"] = "claude-sonnet-4-6"
        if harness_from is not None and n >= harness_from:
            recorded["harness"] = "messages-api"
        (folder / "conditions.json").write_text(json.dumps(recorded), encoding="utf-8")


@pytest.fixture
def twenty(sample: None, tmp_path: Path) -> None:
    """ "twenty": 20 iterations, the agent model changing at #8 and the mode at #15."""
    write_trend(tmp_path, skill="twenty", iterations=20, model_from=8, revision_from=15)
    import_workspace([tmp_path])


@pytest.fixture
def hundred(sample: None, tmp_path: Path) -> None:
    """ "hundred": 100 iterations, the harness changing at #40 and the eval set at #70."""
    write_trend(tmp_path, skill="hundred", iterations=100, harness_from=40, more_evals_from=70)
    import_workspace([tmp_path])


def open_charts(page: Page, path: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(path)
    for chart in CHARTS:
        expect(page.locator(f"[data-chart='{chart[1:]}'] .main-svg").first).to_be_visible()
    # charts.js fits each chart (ticks, height) once plotly has drawn it.
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('[data-chart]')).every("
        "e => e._fullLayout && e._fullLayout._size.h >= 195)"
    )


def boxes(page: Page, chart: str, selector: str) -> list[dict[str, float]]:
    return page.evaluate(
        """([chart, selector]) => Array.from(
            document.querySelectorAll(`[data-chart='${chart}'] ${selector}`)
        ).map(e => { const r = e.getBoundingClientRect();
            return {x: r.x, y: r.y, w: r.width, h: r.height, text: e.textContent}; })""",
        [chart, selector],
    )


def chart_box(page: Page, chart: str) -> dict[str, float]:
    (box,) = boxes(page, chart, ".main-svg:first-of-type")
    return box


def overlapping(labels: list[dict[str, float]]) -> list[tuple[str, str]]:
    ordered = sorted((b for b in labels if b["w"]), key=lambda b: b["x"])
    return [
        (a["text"], b["text"])
        for a, b in zip(ordered, ordered[1:], strict=False)
        if a["x"] + a["w"] > b["x"]
    ]


def inside(box: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        box["x"] >= outer["x"] - 0.5
        and box["y"] >= outer["y"] - 0.5
        and box["x"] + box["w"] <= outer["x"] + outer["w"] + 0.5
        and box["y"] + box["h"] <= outer["y"] + outer["h"] + 0.5
    )


def expect_readable(page: Page) -> dict[str, Any]:
    """Every chart: plot areas ≥ MIN_PLOT_PX, ticks side by side, titles inside the svg."""
    seen: dict[str, Any] = {}
    for chart in CHARTS:
        name = chart[1:]
        svg = chart_box(page, name)
        plots = boxes(page, name, ".draglayer .nsewdrag")
        assert plots, name
        # The cost chart stacks two panels: together they keep the plot area's height.
        assert sum(p["h"] for p in plots) >= MIN_PLOT_PX, (name, plots)
        ticks = boxes(page, name, ".xtick text")
        assert ticks and not overlapping(ticks), (name, overlapping(ticks))
        assert all(t["text"].startswith("#") and len(t["text"]) <= 4 for t in ticks), ticks
        titles = boxes(page, name, ".g-ytitle text") + boxes(page, name, ".g-y2title text")
        assert titles, name
        for title in titles:
            assert inside(title, svg), (name, title, svg)
        if len(titles) == 2:  # tokens over seconds: one title each, apart
            assert not overlapping([{**t, "x": t["y"], "w": t["h"]} for t in titles]), titles
        seen[name] = {"ticks": [t["text"] for t in ticks], "plots": plots}
    return seen


def break_labels(page: Page, chart: str) -> list[str]:
    return [b["text"] for b in boxes(page, chart, ".annotation-text") if "changed" in b["text"]]


@pytest.mark.parametrize("width", [1366, 375])
def test_twenty_iterations_read_at_a_laptops_and_a_phones_width(
    page: Page, twenty: None, width: int, screenshot: Callable[[str], Path], js_errors: list[str]
) -> None:
    open_charts(page, "/skills/twenty/", width)

    seen = expect_readable(page)

    assert "#20" in seen["chart-score"]["ticks"]  # the newest is always labelled
    # Model changes before #8, mode before #15: two dotted lines, labelled, in every chart.
    assert break_labels(page, "chart-delta") == ["model changed", "mode changed"]
    assert break_labels(page, "chart-score") == ["model changed", "mode changed"]
    expect(
        page.locator("[data-chart='chart-delta'] .legendtext", has_text="comparison changed")
    ).to_be_visible()
    caption = page.locator("#chart-delta ~ .chart-data").locator("xpath=preceding-sibling::p[1]")
    expect(caption).to_contain_text(
        "#8: model changed (agent model claude-haiku-4-5 → claude-sonnet-4-6)"
    )
    expect(caption).to_contain_text("#15: mode changed (mode new-skill → revision)")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(f"{width}")
    assert js_errors == []


@pytest.mark.parametrize("width", [1366, 375])
def test_a_hundred_iterations_thin_their_ticks_and_keep_their_height(
    page: Page, hundred: None, width: int, screenshot: Callable[[str], Path], js_errors: list[str]
) -> None:
    open_charts(page, "/skills/hundred/", width)

    seen = expect_readable(page)

    ticks = seen["chart-delta"]["ticks"]
    assert 3 <= len(ticks) <= 20 and ticks[-1] == "#100"
    assert break_labels(page, "chart-delta") == ["harness changed", "evals changed"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(f"{width}")
    assert js_errors == []


def test_narrowing_the_window_thins_the_ticks_again(page: Page, hundred: None) -> None:
    open_charts(page, "/skills/hundred/", 1366)
    wide = len(boxes(page, "chart-score", ".xtick text"))

    page.set_viewport_size({"width": 375, "height": 900})
    ticks = "[data-chart='chart-score'] .xtick text"
    page.wait_for_function(f'() => document.querySelectorAll("{ticks}").length < {wide}')

    assert not overlapping(boxes(page, "chart-score", ".xtick text"))


def test_without_javascript_the_tables_mark_the_breaks(
    browser: Browser, live_server: Any, twenty: None
) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/$"))
    page.goto("/skills/twenty/")

    numbers = page.locator("#chart-score ~ details.chart-data")
    expect(numbers).to_have_attribute("open", "")
    marks = numbers.locator("tr.chart-break")
    expect(marks).to_have_count(2)
    expect(marks.first).to_contain_text("#8: model changed")
    # The marker row stands just before the iteration it names.
    after = marks.first.locator("xpath=following-sibling::tr[1]")
    expect(after).to_contain_text("#8 iteration-8")
    expect(marks.nth(1)).to_contain_text("#15: mode changed (mode new-skill → revision)")
    context.close()
