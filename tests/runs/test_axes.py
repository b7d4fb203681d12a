"""A skill across harnesses and models: the matrix, the trends, the page and the API, from
iterations written the way eval-magic writes them, each recording its harness and model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.sharing import share_view
from runs.charts.axes import axes_trend_figure
from runs.importing import import_workspace
from runs.models import Skill
from runs.reading.axes import skill_axes
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

SKILL = "demo-skill"
#: Six evals: the fewest whose permutation test can reach p < 0.05.
EVALS = [f"e{i}" for i in range(6)]
HOSTILE_HARNESS = '<script>alert("h")</script>'
HOSTILE_MODEL = '"><img src=x onerror=alert(1)>'


def iteration(
    root: Path,
    number: int,
    *,
    harness: str,
    model: str,
    effect: str,
    mode: str = "new-skill",
) -> Path:
    """iteration-<number>, recorded with `harness` and `model`; `effect` helps (the skill's
    condition passes every eval, the other none), hurts (the reverse) or noise (both half)."""
    treatment, control = ("with_skill", "without_skill")
    if mode == "revision":
        control, treatment = ("old_skill", "new_skill")
    passes = {
        "helps": (True, False),
        "hurts": (False, True),
        "noise": (None, None),
    }[effect]
    cells = {}
    for index, eval_id in enumerate(EVALS):
        t, c = passes
        if t is None:  # noise: each side passes alternate evals
            t = c = index % 2 == 0
        cells[(eval_id, treatment)] = [{"a1": t}]
        cells[(eval_id, control)] = [{"a1": c}]
    folder = eval_magic_iteration(
        root,
        skill=SKILL,
        label=f"iteration-{number}",
        mode=mode,
        timestamp=f"2026-05-{number:02d}T10:00:00Z",
        cells=cells,
        conditions=[treatment, control] if mode == "new-skill" else [control, treatment],
    )
    conditions = json.loads((folder / "conditions.json").read_text())
    conditions.update(harness=harness, agent_model=model)
    if not harness:
        del conditions["harness"]
    (folder / "conditions.json").write_text(json.dumps(conditions))
    return folder


def load(root: Path, *specs: tuple[str, str, str] | tuple[str, str, str, str]) -> Skill:
    folders = [
        iteration(root, n, harness=s[0], model=s[1], effect=s[2], mode=(s[3:] or ("new-skill",))[0])
        for n, s in enumerate(specs, start=1)
    ]
    import_workspace(folders)
    return Skill.objects.get(name=SKILL)


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    return load(
        tmp_path,
        ("claude-code", "sonnet", "noise"),
        ("claude-code", "sonnet", "helps"),
        ("codex", "sonnet", "hurts"),
        ("claude-code", "haiku", "helps"),
        ("", "haiku", "noise"),
        ("codex", "sonnet", "helps", "revision"),
    )


def test_iterations_are_grouped_by_harness_and_model_within_one_mode(skill: Skill) -> None:
    axes = skill_axes(skill, mode="new-skill")

    assert axes.mode == "new-skill"
    assert [(c.harness, c.model, len(c.summaries)) for c in axes.combinations] == [
        ("claude-code", "haiku", 1),
        ("claude-code", "sonnet", 2),
        ("codex", "sonnet", 1),
        ("", "haiku", 1),
    ]
    assert axes.harnesses == ["claude-code", "codex", ""]
    assert axes.models == ["haiku", "sonnet"]
    rows = {h: [c and c.iteration.number for c in cells] for h, cells in axes.rows}
    assert rows == {"claude-code": [4, 2], "codex": [None, 3], "": [5, None]}
    # The revision iteration is its own mode's, never mixed into these.
    assert axes.modes == [("new-skill", "new skill", 5), ("revision", "revision", 1)]


def test_each_combination_shows_its_latest_delta_verdict_and_trend(skill: Skill) -> None:
    axes = skill_axes(skill, mode="new-skill")
    sonnet = next(c for c in axes.combinations if c.label == "claude-code · sonnet")

    assert sonnet.iteration.number == 2
    assert sonnet.delta.mean == pytest.approx(1.0) and sonnet.delta.signal == "significant"
    assert sonnet.verdict.startswith("with_skill beats without_skill by +1.00 (95% CI")
    assert sonnet.runs == 12 and sonnet.direction == 1
    assert sonnet.invocation.successes == 6 and sonnet.invocation.n == 6
    assert [round(s.delta.mean, 2) for s in sonnet.summaries] == [0.0, 1.0]
    unrecorded = axes.combinations[-1]
    assert unrecorded.label == "not recorded · haiku" and unrecorded.direction == 0


def test_a_sign_that_differs_between_combinations_is_said_in_plain_words(skill: Skill) -> None:
    axes = skill_axes(skill, mode="new-skill")

    flip = axes.sign_flip
    assert [c.label for c in flip.helps] == ["claude-code · haiku", "claude-code · sonnet"]
    assert [c.label for c in flip.hurts] == ["codex · sonnet"]
    assert flip.sentence == (
        "The skill significantly helps on claude-code · haiku (Δ +1.00, 95% CI +1.00 to +1.00, "
        "#4) and claude-code · sonnet (Δ +1.00, 95% CI +1.00 to +1.00, #2), but significantly "
        "hurts on codex · sonnet (Δ −1.00, 95% CI −1.00 to −1.00, #3): its effect depends on "
        "the harness and model, so measure it on the one you use."
    )
    assert [(h.iteration.number, c.iteration.number) for h, c in flip.pairs] == [(4, 3), (2, 3)]


def test_the_default_mode_is_the_newest_iterations(skill: Skill) -> None:
    axes = skill_axes(skill)

    assert axes.mode == "revision"
    assert [(c.harness, c.model) for c in axes.combinations] == [("codex", "sonnet")]
    assert axes.sign_flip is None


def test_the_trend_chart_draws_a_coloured_line_per_combination(skill: Skill) -> None:
    axes = skill_axes(skill, mode="new-skill")
    traces = axes.figure["data"]

    assert [t["name"] for t in traces] == [c.label for c in axes.combinations]
    assert traces[1]["x"] == [1, 2] and traces[1]["y"] == pytest.approx([0.0, 1.0])
    assert len({t["line"]["color"] for t in traces}) == len(traces)
    assert axes.figure["layout"]["xaxis"]["ticktext"] == ["#1", "#2", "#3", "#4", "#5"]
    assert axes.figure["layout"]["yaxis"]["title"]["text"] == "Δ score"


def test_more_combinations_than_colours_are_told_apart_by_dashes() -> None:
    from runs.charts import TrendPoint
    from runs.charts.points import DeltaPoint

    points = [TrendPoint(number=n, label="", delta=DeltaPoint(0.1)) for n in range(1, 10)]
    figure = axes_trend_figure(points, [(f"h · m{n}", [p]) for n, p in enumerate(points)])

    styles = [(t["line"]["color"], t["line"]["dash"]) for t in figure["data"]]
    assert len(set(styles)) == 9


def test_the_page_shows_the_matrix_with_links(client: Client, admin_user: User, skill) -> None:
    client.force_login(admin_user)

    response = client.get(f"/skills/{SKILL}/axes/?mode=new-skill")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Latest delta per harness × model" in html
    assert f'href="/skills/{SKILL}/iterations/4/"' in html
    # Compared with the first combination (claude-code · haiku, #4).
    assert f'href="/skills/{SKILL}/compare/?a=4&amp;b=2"' in html
    assert "The effect's sign differs" in html
    assert f'href="/skills/{SKILL}/compare/?a=3&amp;b=4"' in html
    assert ">not recorded</th>" in html
    assert 'data-chart="chart-axes"' in html
    assert f'href="/skills/{SKILL}/axes/?mode=revision"' in html


def test_the_page_works_with_an_unknown_mode_as_the_default(
    client: Client, admin_user: User, skill
) -> None:
    client.force_login(admin_user)

    response = client.get(f"/skills/{SKILL}/axes/?mode=nonsense")

    assert response.status_code == 200
    assert '<strong aria-current="page">revision (1)</strong>' in response.content.decode()


def test_hostile_harness_and_model_names_are_escaped(
    client: Client, admin_user: User, tmp_path: Path
) -> None:
    found = load(
        tmp_path,
        (HOSTILE_HARNESS, HOSTILE_MODEL, "helps"),
        ("claude-code", HOSTILE_MODEL, "hurts"),
    )
    client.force_login(admin_user)

    html = client.get(f"/skills/{SKILL}/axes/").content.decode()

    assert HOSTILE_HARNESS not in html and HOSTILE_MODEL not in html
    assert "&lt;script&gt;alert(&quot;h&quot;)&lt;/script&gt;" in html
    figure = skill_axes(found).figure
    names = [t["name"] for t in figure["data"]]
    assert (
        names[0]
        == '&lt;script&gt;alert("h")&lt;/script&gt; · "&gt;&lt;img src=x onerror=alert(1)&gt;'
    )
    api = client.get(f"/api/skills/{SKILL}/axes").json()
    assert {c["harness"] for c in api["combinations"]} == {HOSTILE_HARNESS, "claude-code"}


def test_the_page_asks_the_same_few_queries_however_many_iterations(
    client: Client, admin_user: User, tmp_path: Path
) -> None:
    client.force_login(admin_user)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/skills/{SKILL}/axes/?mode=new-skill").status_code == 200
        return len(captured)

    load(tmp_path / "small", ("claude-code", "a", "helps"), ("codex", "b", "hurts"))
    small = queries()
    Skill.objects.all().delete()
    load(
        tmp_path / "large",
        *[(h, m, "helps") for h in ("claude-code", "codex", "cline") for m in ("a", "b", "c")],
        *[("claude-code", "a", "noise")] * 6,
    )
    large = queries()

    assert large == small
    assert small <= 15


def test_a_skill_share_link_opens_the_page_and_an_iteration_link_does_not(
    client: Client, admin_user: User, skill
) -> None:
    skill_link = share_view(creator=admin_user, address=f"/skills/{SKILL}/").secret
    iteration_link = share_view(creator=admin_user, address=f"/skills/{SKILL}/iterations/2/").secret

    opened = client.get(f"/skills/{SKILL}/axes/?mode=new-skill&share={skill_link}")
    refused = Client().get(f"/skills/{SKILL}/axes/?share={iteration_link}")

    assert opened.status_code == 200 and "Latest delta per harness" in opened.content.decode()
    assert refused.status_code in (302, 403, 404)


def test_the_skill_page_links_the_page_when_there_is_more_than_one_combination(
    client: Client, admin_user: User, tmp_path: Path
) -> None:
    client.force_login(admin_user)
    load(tmp_path / "one", ("claude-code", "a", "helps"), ("claude-code", "a", "noise"))
    assert f"/skills/{SKILL}/axes/" not in client.get(f"/skills/{SKILL}/").content.decode()

    Skill.objects.all().delete()
    load(tmp_path / "two", ("claude-code", "a", "helps"), ("codex", "a", "noise"))
    assert f'href="/skills/{SKILL}/axes/"' in client.get(f"/skills/{SKILL}/").content.decode()


def test_the_api_gives_the_same_matrix_and_trends(client: Client, admin_user: User, skill) -> None:
    client.force_login(admin_user)

    data = client.get(f"/api/skills/{SKILL}/axes?mode=new-skill").json()

    assert data["skill"] == SKILL and data["mode"] == "new-skill"
    assert data["modes"] == [
        {"mode": "new-skill", "iterations": 5},
        {"mode": "revision", "iterations": 1},
    ]
    assert data["harnesses"] == ["claude-code", "codex", ""]
    assert data["models"] == ["haiku", "sonnet"]
    sonnet = data["combinations"][1]
    assert (sonnet["harness"], sonnet["model"], sonnet["iterations"]) == (
        "claude-code",
        "sonnet",
        2,
    )
    assert sonnet["latest"]["number"] == 2 and sonnet["latest"]["delta"]["signal"] == "significant"
    assert sonnet["latest"]["url"] == f"/skills/{SKILL}/iterations/2/"
    assert sonnet["latest"]["verdict"].startswith("with_skill beats without_skill by +1.00")
    assert [p["number"] for p in sonnet["trend"]] == [1, 2]
    assert sonnet["invocation"]["successes"] == 6 and sonnet["direction"] == 1
    assert data["sign_flip"]["hurts"] == [{"harness": "codex", "model": "sonnet", "iteration": 3}]
    assert len(data["sign_flip"]["helps"]) == 2
    assert data["sign_flip"]["sentence"].startswith("The skill significantly helps on")
    assert data["url"] == f"/skills/{SKILL}/axes/?mode=new-skill"
    assert client.get("/api/skills/no-such/axes").status_code == 404


def test_plotly_validates_the_trend_and_no_name_reaches_it_as_markup(tmp_path: Path) -> None:
    import plotly.graph_objects as go
    import plotly.io as pio

    from runs.charts import HOVER
    from tests.runs.test_charts import strings

    found = load(tmp_path, (HOSTILE_HARNESS, HOSTILE_MODEL, "helps"), ("codex", "m", "hurts"))
    for figure in (skill_axes(found).figure, axes_trend_figure([], [])):
        assert json.loads(pio.to_json(go.Figure(figure), validate=True)) == figure
        assert {text for _, text in strings(figure) if "<" in text} <= {HOVER}
