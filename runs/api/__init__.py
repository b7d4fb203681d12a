"""The JSON API's results side: one router made of a module per resource.

`results` (skills, iterations, trends, benchmarks, comparisons), `history` (an eval
across iterations), `axes` (a skill across harnesses and models), `runs`, `imports`,
`triggers` (trigger evals), `reports` (CI's summary and JUnit files) and `exports` (CSV and
JSON downloads);
the response schemas, which read the models' and statistics' attributes, in `schemas`.
Each operation names its `operation_id` as it was when this was one module, so clients
generated from the OpenAPI document keep their method names.
"""

from __future__ import annotations

from ninja import Router

from . import axes, exports, history, imports, reports, results, runs, triggers

router = Router()
for part in (
    results.router,
    history.router,
    axes.router,
    runs.router,
    imports.router,
    triggers.router,
    reports.router,
    exports.router,
):
    router.add_router("", part)
