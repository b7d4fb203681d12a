"""JUnit XML for CI: one test case per eval × condition of each iteration.

A test case fails when its assertions failed in a graded run or, for the treatment, when
the eval regressed since the previous iteration; it is in error when a run errored, and
skipped when it has runs but none graded. CI systems show the file as a test report, so
each message names the assertions, runs and scores behind it. Built with ElementTree, so
whatever agents wrote is escaped as XML text or attribute values.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC

from ..names import natural_key
from ..stats.verdicts import unsigned
from .outcome import IterationOutcome


def junit_xml(outcomes: Sequence[IterationOutcome]) -> bytes:
    """A `<testsuites>` document with a `<testsuite>` per iteration, UTF-8 encoded."""
    root = ET.Element("testsuites", name="evalsite")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for outcome in outcomes:
        suite = _suite(outcome)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _suite(outcome: IterationOutcome) -> ET.Element:
    iteration, summary = outcome.iteration, outcome.summary
    classname = f"{outcome.skill}/#{iteration.number}"
    suite = ET.Element("testsuite", name=f"{outcome.skill} #{iteration.number} ({iteration.label})")
    if iteration.generated_at:
        stamp = iteration.generated_at.astimezone(UTC).replace(tzinfo=None)
        suite.set("timestamp", stamp.isoformat("T", "seconds"))
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="verdict", value=summary.verdict)
    treatment = summary.treatment.name if summary.treatment else None
    regressed = {change.eval_id: change for change in outcome.regressed}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cells = summary.cells
    for eval_id, condition in sorted(cells, key=lambda k: (natural_key(k[0]), k[1])):
        cell = cells[eval_id, condition]
        case = ET.SubElement(
            suite, "testcase", classname=classname, name=f"{eval_id} ({condition})"
        )
        counts["tests"] += 1
        reasons = []
        failed = outcome.failed.get((eval_id, condition), [])
        if failed:
            reasons.append(
                "assertions failed: "
                + ", ".join(f"{a} ({n} of {runs} runs)" for a, n, runs in failed)
            )
        change = regressed.get(eval_id) if condition == treatment else None
        if change is not None:
            since = f"#{outcome.previous.number}" if outcome.previous else "the previous iteration"
            moved = ""
            if change.treatment_before is not None and change.treatment_after is not None:
                moved = (
                    f": {unsigned(change.treatment_before)} → {unsigned(change.treatment_after)}"
                )
            reasons.insert(0, f"regressed since {since}{moved}")
        if reasons:
            counts["failures"] += 1
            ET.SubElement(case, "failure", message="; ".join(reasons), type="failure")
        errors = outcome.errors.get((eval_id, condition), [])
        if errors:
            counts["errors"] += 1
            message = "; ".join(f"run {index}: {what}" for index, what in errors)
            ET.SubElement(case, "error", message=message, type="errored")
        elif not cell.graded and not reasons:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message="no graded run (no grading.json)")
    for key, value in counts.items():
        suite.set(key, str(value))
    return suite
