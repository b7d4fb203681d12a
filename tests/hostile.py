"""Hostile agent text: the XSS fixtures every view that shows what agents wrote must survive.

`hostile_workspace` writes one eval-magic iteration whose prompt, final messages, assistant
messages, tool arguments and results, evidence and reviewer feedback are all these payloads,
and whose diff.patch names a file with a bidirectional override in it.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from tests.factories import eval_magic_iteration, grading, run_record, write_json

#: Markdown with script, javascript: links, event-handler attributes and raw HTML blocks.
PAYLOADS = (
    "<script>alert('script')</script>",
    "[click me](javascript:alert('link'))",
    "[upper](JAVASCRIPT:alert('upper'))",
    "<img src=x onerror=alert('onerror')>",
    "<a href=\"javascript:alert('raw-a')\">raw link</a>",
    "<div onmouseover=\"alert('div')\">raw HTML block</div>",
    "![tracker](https://tracker.example/pixel.png)",
    "<svg onload=alert('svg')></svg>",
    "<iframe src=\"javascript:alert('iframe')\"></iframe>",
    "`code` **bold** <b onclick=alert('b')>b</b>",
    # Trojan Source: an override and isolates that would show this line in another order.
    "access = 'user' /* \u202e } \u2066if (is_admin)\u2069 \u2066 admins only */",
)
#: One text holding every payload, as Markdown an agent might write.
HOSTILE = "Summary with payloads:\n\n" + "\n\n".join(PAYLOADS) + "\n\nunique-hostile-marker"
SKILL = "hostile-skill"
EVAL = "alpha"


def hostile_workspace(root: Path) -> Path:
    """Write `<root>/hostile-skill/iteration-1/` (with_skill, without_skill) full of payloads."""
    folder = eval_magic_iteration(root, skill=SKILL)
    for condition in ("with_skill", "without_skill"):
        run_dir = folder / f"eval-{EVAL}" / condition
        record = run_record(EVAL, condition, prompt=HOSTILE)
        record["final_message"] = HOSTILE
        record["tool_invocations"] = [
            {"name": "Bash", "args": {"command": HOSTILE}, "ordinal": 1, "result": HOSTILE}
        ]
        write_json(run_dir / "run.json", record)
        write_json(
            run_dir / "conversation.json",
            {
                "status": "completed",
                "delivered_followups": 0,
                "events": [
                    {"type": "user_message", "ordinal": 0, "round": 1, "text": HOSTILE},
                    {
                        "type": "tool_invocation",
                        "ordinal": 1,
                        "round": 1,
                        "name": "Bash",
                        "args": {"command": HOSTILE},
                        "result": HOSTILE,
                    },
                    {"type": "assistant_message", "ordinal": 2, "round": 1, "text": HOSTILE},
                ],
            },
        )
        graded = grading({"a1": True, "a2": condition == "with_skill"})
        for result in graded["assertion_results"]:
            result["evidence"] = f"matched ordinal 1: {HOSTILE}"
        write_json(run_dir / "grading.json", graded)
        (run_dir / "diff.patch").write_text(hostile_patch(condition), encoding="utf-8")
    return folder


def hostile_patch(condition: str) -> str:
    """A diff.patch whose file name and added line hold bidirectional controls."""
    return (
        "--- a/run\u202ehs.txt\n+++ b/run\u202ehs.txt\n@@ -1 +1 @@\n-echo ok\n"
        f"+echo {condition} \u2066# \u202erm -rf /\u2069\n"
    )


class _Markup(HTMLParser):
    """Collects what in a page could run script or fetch from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.unsafe: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"img", "svg", "iframe", "object", "embed"}:
            self.unsafe.append(f"<{tag}>")
        if tag == "script" and not any(name == "src" for name, _ in attrs):
            self.unsafe.append("<script> without src")
        for name, value in attrs:
            if name.startswith("on"):
                self.unsafe.append(f"<{tag} {name}>")
            if name in {"href", "src", "action"} and (value or "").strip().lower().startswith(
                ("javascript:", "data:", "vbscript:")
            ):
                self.unsafe.append(f"<{tag} {name}={value}>")


def unsafe_markup(html: str) -> list[str]:
    """Every tag or attribute of the page that could run script or load a foreign image."""
    parser = _Markup()
    parser.feed(html)
    return parser.unsafe
