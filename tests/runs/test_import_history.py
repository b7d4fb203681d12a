"""`importworkspace --history`: each promoted campaign in a clone's git log is one iteration."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string

from runs.importing import ImportFailure, import_workspace
from runs.importing.history import import_history
from runs.models import EvalCase, Iteration, Run, Skill
from tests.factories import (
    eval_magic_iteration,
    grading,
    skill_creator_iteration,
    skill_folder,
    write_json,
)
from tests.hostile_git import GIT_ENV, arm, make_partial_clone

pytestmark = pytest.mark.django_db


class Clone:
    """A git repository built commit by commit, one day apart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commits = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str | None = None, stdin: str | None = None) -> str:
        env = {**GIT_ENV, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def commit(self, subject: str) -> str:
        self.commits += 1
        self.git("add", "-A")
        self.git("commit", "-q", "-m", subject, date=self.date(self.commits))
        return self.git("rev-parse", "HEAD").strip()

    @staticmethod
    def date(day: int) -> str:
        return f"2026-05-{day:02d}T12:00:00+00:00"


def promote(
    skill: Path,
    *,
    timestamp: str,
    iteration: str = "iteration-1",
    label: str = "v1",
    notes: str = "First notes.",
    treated: dict[str, bool] | None = None,
) -> Path:
    """Write `<skill>/evals/baseline/` as eval-magic's promote-baseline does: replacing it."""
    baseline = skill / "evals" / "baseline"
    shutil.rmtree(baseline, ignore_errors=True)
    (baseline / "grading").mkdir(parents=True)
    rows = {
        "Mode": "new-skill",
        "Iteration": iteration,
        "Harness": "claude-code",
        "Agent model": "claude-haiku-4-5",
        "Judge model": "claude-sonnet-4-6",
        "Conditions": "with_skill, without_skill",
        "Run timestamp": timestamp,
        "Label": label,
    }
    table = "\n".join(f"| {field} | {value} |" for field, value in rows.items())
    (baseline / "BASELINE.md").write_text(
        f"# Baseline\n\n| Field | Value |\n|-------|-------|\n{table}\n", encoding="utf-8"
    )
    (baseline / "NOTES.md").write_text(notes, encoding="utf-8")
    summary = {
        "pass_rate": {"mean": 0.75, "stddev": 0.25, "n": 1},
        "duration_ms": {"mean": 61176, "stddev": 0, "n": 1},
        "total_tokens": {"mean": 59354, "stddev": 0, "n": 1},
    }
    write_json(
        baseline / "benchmark.json",
        {
            "generated": timestamp,
            "mode": "new-skill",
            "conditions_compared": ["with_skill", "without_skill"],
            "missing_gradings": 0,
            "validity_warnings": [],
            "run_summary": {"with_skill": summary, "without_skill": summary},
            "delta": {
                "direction": "with_skill - without_skill",
                "pass_rate": 0.0,
                "duration_ms": 0,
                "total_tokens": 0,
            },
        },
    )
    write_json(
        baseline / "grading" / "alpha__with_skill.json",
        grading(treated or {"a1": True, "a2": True}),
    )
    write_json(
        baseline / "grading" / "alpha__without_skill.json", grading({"a1": True, "a2": False})
    )
    return baseline


@pytest.fixture
def clone(tmp_path: Path) -> Clone:
    # A space and non-ASCII letters in the path: git quotes such names unless told not to.
    return Clone(tmp_path / "skills repo")


@pytest.fixture
def skill(clone: Clone) -> Path:
    return skill_folder(clone.path / "plugins" / "café tools", name="demo-skill")


@pytest.fixture
def history(clone: Clone, skill: Path) -> dict[str, str]:
    """Campaign A, an edit of A's notes, campaign B replacing A, then an unrelated commit."""
    promote(skill, timestamp="2026-05-01T10:00:00Z", label="first")
    shas = {"A": clone.commit("Promote baseline A")}
    (skill / "evals" / "baseline" / "NOTES.md").write_text("Notes, revised.", encoding="utf-8")
    shas["A notes"] = clone.commit("Revise A's notes")
    promote(skill, timestamp="2026-05-03T10:00:00Z", iteration="iteration-2", label="second")
    shas["B"] = clone.commit("Promote baseline B")
    (clone.path / "README.md").write_text("A repository of skills.", encoding="utf-8")
    shas["README"] = clone.commit("Add a README")
    return shas


def counts() -> tuple[int, int, int, int]:
    return (
        Skill.objects.count(),
        Iteration.objects.count(),
        Run.objects.count(),
        EvalCase.objects.count(),
    )


def test_each_promoted_campaign_becomes_one_iteration_in_commit_order(
    clone: Clone, history: dict[str, str]
) -> None:
    calls: list[tuple[int, int, str]] = []

    report = import_history([clone.path], progress=lambda *call: calls.append(call))

    first, second = Iteration.objects.order_by("number")
    assert (first.number, first.source_key) == (1, "iteration-1@2026-05-01T10:00:00Z")
    assert (second.number, second.source_key) == (2, "iteration-2@2026-05-03T10:00:00Z")
    assert first.notes == "Notes, revised."  # commit 2's NOTES.md, not commit 1's
    assert first.provenance["git"] == {
        "commit": history["A notes"],
        "date": Clone.date(2),
        "subject": "Revise A's notes",
        "first_commit": history["A"],
        "first_date": Clone.date(1),
        "first_subject": "Promote baseline A",
        "repository": str(clone.path),
        "path": "plugins/café tools/demo-skill/evals/baseline",
    }
    assert first.provenance["BASELINE.md"]["Label"] == "first"  # the file's own provenance too
    assert second.provenance["git"]["commit"] == second.provenance["git"]["first_commit"]
    assert second.provenance["git"]["commit"] == history["B"]
    assert second.run_label == "second" and second.runs.count() == 2
    assert report.counts["iterations"] == {"created": 2}
    assert [(done, total) for done, total, _ in calls] == [(1, 2), (2, 2)]
    assert calls[0][2].startswith(f"{clone.path}@{history['A notes'][:7]}/")


def test_running_it_again_changes_nothing(clone: Clone, history: dict[str, str]) -> None:
    import_history([clone.path])
    rows = Iteration.objects.order_by("pk").values_list("pk", "updated_at", "number")
    before = list(rows)

    report = import_history([clone.path])

    assert report.counts["iterations"] == {"skipped": 2}
    assert report.counts["runs"] == {"skipped": 4}
    assert list(rows.all()) == before


def test_after_a_new_promotion_it_adds_only_that_campaign(
    clone: Clone, skill: Path, history: dict[str, str]
) -> None:
    import_history([clone.path])
    promote(skill, timestamp="2026-05-05T10:00:00Z", iteration="iteration-3", label="third")
    sha = clone.commit("Promote baseline C")

    report = import_history([clone.path])

    assert report.counts["iterations"] == {"created": 1, "skipped": 2}
    newest = Iteration.objects.get(number=3)
    assert newest.run_label == "third" and newest.provenance["git"]["commit"] == sha


def test_each_iteration_links_to_the_evals_json_of_its_own_commit(clone: Clone) -> None:
    skill = skill_folder(clone.path, name="demo-skill")
    promote(skill, timestamp="2026-05-01T10:00:00Z")
    clone.commit("Promote A")
    evals = json.loads((skill / "evals" / "evals.json").read_text())
    evals["evals"][0]["prompt"] = "Do the task, then check it."
    write_json(skill / "evals" / "evals.json", evals)
    promote(skill, timestamp="2026-05-02T10:00:00Z", iteration="iteration-2")
    clone.commit("Reword alpha and promote B")

    import_history([clone.path])

    prompts = {
        iteration.number: {run.eval_case.prompt for run in iteration.runs.all()}
        for iteration in Iteration.objects.all()
    }
    assert prompts == {1: {"Do the task."}, 2: {"Do the task, then check it."}}
    assert EvalCase.objects.filter(eval_id="alpha", origin="evals.json").count() == 2


def test_committed_iterations_and_workspaces_are_followed_too(clone: Clone) -> None:
    iteration = eval_magic_iteration(clone.path / "skills-workspace", skill="demo-skill")
    skill_creator_iteration(clone.path, skill="creator-skill")
    first = clone.commit("Commit an eval-magic iteration and a skill-creator workspace")
    write_json(
        iteration / "eval-alpha" / "without_skill" / "grading.json",
        grading({"a1": True, "a2": True}),
    )
    regraded = clone.commit("Regrade alpha without the skill")

    report = import_history([clone.path])

    assert report.counts["iterations"] == {"created": 2}
    magic = Iteration.objects.get(skill__name="demo-skill")
    assert magic.provenance["git"]["commit"] == regraded
    assert magic.provenance["git"]["first_commit"] == first
    assert magic.runs.get(condition__name="without_skill").grading.pass_rate == 1.0
    creator = Iteration.objects.get(skill__name="creator-skill")
    # Its files carry no timestamp: the commit that brought it in dates it.
    assert creator.generated_at.isoformat() == Clone.date(1)
    assert creator.provenance["git"]["path"] == "creator-skill-workspace/iteration-1"


def test_a_campaign_from_history_is_the_same_iteration_as_its_folder(
    tmp_path: Path, real_fixtures: Path
) -> None:
    """The files written from git objects are byte for byte the folder a plain import reads."""
    real = real_fixtures / "slow-powers" / "auditing-slow-powers-usage"
    clone = Clone(tmp_path / "clone")
    shutil.copytree(real, clone.path / real.name)  # a temporary clone, not the project
    clone.commit("Promote the real baseline")
    import_history([clone.path])

    report = import_workspace([real])

    assert report.counts["iterations"] == {"skipped": 1}
    assert Iteration.objects.get().provenance["git"]["subject"] == "Promote the real baseline"


def test_the_command_imports_history_and_prints_one_summary(
    clone: Clone, history: dict[str, str]
) -> None:
    out = io.StringIO()

    call_command("importworkspace", "--history", str(clone.path), stdout=out)

    assert out.getvalue().splitlines()[0].startswith("Imported skills: 1 created")
    assert "iterations: 2 created" in out.getvalue()
    assert Iteration.objects.count() == 2


def test_a_folder_inside_the_clone_imports_only_the_history_below_it(
    clone: Clone, skill: Path, history: dict[str, str]
) -> None:
    other = skill_folder(clone.path / "elsewhere", name="other-skill")
    promote(other, timestamp="2026-05-06T10:00:00Z")
    clone.commit("Promote the other skill's baseline")

    import_history([skill.parent])

    assert set(Iteration.objects.values_list("skill__name", flat=True)) == {"demo-skill"}
    assert Iteration.objects.count() == 2


def test_a_path_outside_any_clone_is_one_line_and_saves_nothing(
    tmp_path: Path, clone: Clone, skill: Path, history: dict[str, str], monkeypatch
) -> None:
    import_history([clone.path])
    before = counts()
    promote(skill, timestamp="2026-05-05T10:00:00Z", iteration="iteration-3")
    clone.commit("Promote baseline C")
    plain = tmp_path / "plain folder"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # whatever holds tmp_path

    with pytest.raises(CommandError) as raised:
        call_command("importworkspace", "--history", str(clone.path), str(plain))

    message = str(raised.value)
    assert message == f"{plain}: not in a git clone (no .git here or in a folder above)"
    assert counts() == before  # campaign C, read before the bad path, is not saved either


def test_a_history_without_results_names_the_path(clone: Clone) -> None:
    skill_folder(clone.path, name="demo-skill")
    clone.commit("A skill without a baseline yet")

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: no promoted baseline, eval-magic iteration or skill-creator workspace "
        "in the git history here"
    )


def test_a_bad_campaign_rejects_the_import_unless_keep_going(clone: Clone, skill: Path) -> None:
    promote(skill, timestamp="2026-05-01T10:00:00Z")
    clone.commit("Promote A")
    bad = promote(skill, timestamp="2026-05-02T10:00:00Z", iteration="iteration-2")
    (bad / "grading" / "alpha__with_skill.json").write_text("{not json", encoding="utf-8")
    sha = clone.commit("Promote a broken B")

    with pytest.raises(ImportFailure, match=rf"@{sha[:7]}/.*/grading/alpha__with_skill\.json"):
        import_history([clone.path])
    assert counts() == (0, 0, 0, 0)

    report = import_history([clone.path], keep_going=True)

    assert Iteration.objects.get().source_key == "iteration-1@2026-05-01T10:00:00Z"
    assert len(report.rejected) == 1 and "alpha__with_skill.json" in report.rejected[0]


def test_a_dry_run_reads_the_history_and_saves_nothing(
    clone: Clone, history: dict[str, str]
) -> None:
    report = import_history([clone.path], dry_run=True)

    assert report.dry_run and report.counts["iterations"] == {"created": 2}
    assert counts() == (0, 0, 0, 0)


def test_the_archive_limits_bound_what_the_history_writes(
    clone: Clone, history: dict[str, str], settings
) -> None:
    settings.EVALSITE_ARCHIVE_MAX_FILES = 8  # one version is 6 files, its skill 2 more

    with pytest.raises(ImportFailure, match="more than 8 result files .limit EVALSITE_ARCHIVE"):
        import_history([clone.path])
    assert counts() == (0, 0, 0, 0)


def test_without_git_it_says_so(clone: Clone, history: dict[str, str], monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(clone.path / "no git here"))

    with pytest.raises(ImportFailure, match="needs the git command"):
        import_history([clone.path])


def test_a_tree_entry_that_would_escape_the_folder_is_refused(clone: Clone) -> None:
    skill = skill_folder(clone.path, name="demo-skill")
    promote(skill, timestamp="2026-05-01T10:00:00Z")
    clone.commit("Promote A")
    # git fsck refuses a ".." entry, but nothing runs fsck on a clone: build one by hand.
    blob = clone.git("hash-object", "-w", "--stdin", stdin="escaped\n").strip()
    root = _graft(clone, "HEAD", ["demo-skill", "evals", "baseline"], f"100644 blob {blob}\t..")
    crafted = clone.git("commit-tree", root, "-p", "HEAD", "-m", "Craft", date=Clone.date(9))
    clone.git("update-ref", "HEAD", crafted.strip())

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: refused: commit {crafted[:7]} has a path "
        "'demo-skill/evals/baseline/..', which git itself rejects"
    )
    assert not (skill / "evals" / "escaped").exists()
    assert counts() == (0, 0, 0, 0)


def _graft(clone: Clone, tree: str, path: list[str], entry: str) -> str:
    """A copy of `tree` with `entry` (an ls-tree line) added in the folder at `path`."""
    lines = clone.git("ls-tree", tree).splitlines()
    if not path:
        return clone.git("mktree", stdin="\n".join([*lines, entry]) + "\n").strip()
    inner = _graft(
        clone, f"{tree}:{path[0]}" if ":" not in tree else f"{tree}/{path[0]}", path[1:], entry
    )
    lines = [
        f"040000 tree {inner}\t{path[0]}" if line.endswith(f"\t{path[0]}") else line
        for line in lines
    ]
    return clone.git("mktree", stdin="\n".join(lines) + "\n").strip()


def test_the_iteration_page_partial_shows_the_commit_and_the_promotion(
    clone: Clone, history: dict[str, str]
) -> None:
    import_history([clone.path])

    html = render_to_string(
        "runs/_git_provenance.html", {"iteration": Iteration.objects.get(number=1)}
    )

    assert f'<code title="{history["A notes"]}">{history["A notes"][:7]}</code>' in html
    assert "Revise A&#x27;s notes" in html and "2026-05-02" in html
    assert f'promoted in <code title="{history["A"]}">{history["A"][:7]}</code>' in html
    unedited = render_to_string(
        "runs/_git_provenance.html", {"iteration": Iteration.objects.get(number=2)}
    )
    assert history["B"][:7] in unedited and "promoted in" not in unedited


def test_the_partial_escapes_what_the_repository_says_and_is_empty_without_git() -> None:
    hostile = SimpleNamespace(
        provenance={
            "git": {
                "commit": "0123456789abcdef",
                "subject": '<script>alert("x")</script>',
                "path": "<b>bold</b>",
            }
        }
    )

    html = render_to_string("runs/_git_provenance.html", {"iteration": hostile})

    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    plain = SimpleNamespace(provenance={"BASELINE.md": {"Mode": "new-skill"}})
    assert render_to_string("runs/_git_provenance.html", {"iteration": plain}).strip() == ""


def test_history_adds_its_commit_to_a_campaign_already_imported_from_its_folder(
    tmp_path: Path, real_fixtures: Path, client
) -> None:
    real = real_fixtures / "slow-powers" / "auditing-slow-powers-usage"
    clone = Clone(tmp_path / "clone")
    shutil.copytree(real, clone.path / real.name)
    sha = clone.commit("Promote the <real> baseline")
    import_workspace([clone.path])

    report = import_history([clone.path])

    assert report.counts["iterations"] == {"updated": 1}
    iteration = Iteration.objects.get()
    assert iteration.provenance["git"]["commit"] == sha
    html = client.get(iteration.get_absolute_url()).content.decode()
    assert f'<code title="{sha}">{sha[:7]}</code>' in html
    assert "“Promote the &lt;real&gt; baseline”" in html


# --- a clone is untrusted: its config, its links out, its size --------------------------------


def test_a_hostile_clone_runs_none_of_its_programs_and_still_imports(
    clone: Clone, history: dict[str, str], tmp_path: Path
) -> None:
    marker = arm(clone.path, tmp_path)

    report = import_history([clone.path])

    assert report.counts["iterations"] == {"created": 2}
    assert not marker.exists()


def test_a_partial_clone_is_refused_in_one_line_and_its_remote_never_runs(
    clone: Clone, skill: Path, history: dict[str, str], tmp_path: Path
) -> None:
    lost = (skill / "evals" / "baseline" / "NOTES.md").relative_to(clone.path).as_posix()
    marker = make_partial_clone(clone.path, tmp_path, lost=lost)

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: refused: a partial clone (remote.origin.promisor=true in its config): "
        "git would fetch missing objects from its remote"
    )
    assert not marker.exists()
    assert counts() == (0, 0, 0, 0)


def test_alternates_are_refused_in_one_line_naming_the_file(
    clone: Clone, history: dict[str, str], tmp_path: Path
) -> None:
    other = Clone(tmp_path / "someone else's")
    (other.path / "secret.md").write_text("Not yours.", encoding="utf-8")
    other.commit("Private")
    alternates = clone.path / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(exist_ok=True)
    alternates.write_text(f"{other.path / '.git' / 'objects'}\n", encoding="utf-8")

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: refused: {alternates} borrows objects from another repository"
    )


def test_a_utf16_log_encoding_in_the_clones_config_gives_a_normal_import(
    clone: Clone, history: dict[str, str]
) -> None:
    clone.git("config", "i18n.logOutputEncoding", "UTF-16")
    plain = subprocess.run(
        ["git", "-C", str(clone.path), "log", "-1", "--format=%s"], capture_output=True, env=GIT_ENV
    )
    assert plain.stdout.startswith(b"\xff\xfe")  # what plain git prints for this clone

    import_history([clone.path])

    first = Iteration.objects.get(number=1)
    assert first.provenance["git"]["subject"] == "Revise A's notes"
    assert first.provenance["git"]["first_subject"] == "Promote baseline A"


def test_a_tree_over_the_entry_limit_stops_with_one_line(
    clone: Clone, skill: Path, settings
) -> None:
    baseline = promote(skill, timestamp="2026-05-01T10:00:00Z")
    for i in range(40):
        write_json(baseline / "grading" / f"extra-{i}__with_skill.json", grading({"a1": True}))
    clone.commit("Promote a baseline with many gradings")
    folder = (baseline / "grading").relative_to(clone.path).as_posix()
    grading_tree = clone.git("rev-parse", f"HEAD:{folder}").strip()
    settings.EVALSITE_GIT_MAX_TREE_ENTRIES = 30

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: tree {grading_tree} holds more than 30 entries "
        "(limit EVALSITE_GIT_MAX_TREE_ENTRIES)"
    )
    assert counts() == (0, 0, 0, 0)


def test_a_history_changing_too_many_folders_stops_with_one_line(
    clone: Clone, skill: Path, settings
) -> None:
    baseline = promote(skill, timestamp="2026-05-01T10:00:00Z")
    for i in range(40):
        (baseline / "evidence" / f"case-{i}").mkdir(parents=True)
        (baseline / "evidence" / f"case-{i}" / "notes.md").write_text("Seen.", encoding="utf-8")
    clone.commit("Promote a baseline with much evidence")
    settings.EVALSITE_GIT_MAX_TREE_ENTRIES = 30

    with pytest.raises(ImportFailure) as raised:
        import_history([clone.path])

    assert raised.value.message == (
        f"{clone.path}: its history changes files in more than 30 folders "
        "(limit EVALSITE_GIT_MAX_TREE_ENTRIES)"
    )
