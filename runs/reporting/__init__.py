"""Results out to CI: a pull-request summary in Markdown and a JUnit XML file per import.

`outcome` reads what one iteration came to (its summary, the change since the iteration
before it, each eval × condition's failed assertions and errored runs) through
`runs.reading`; `summary` and `junit` turn those outcomes into text without the database.
runevals and importworkspace (`--summary`, `--junit`) and the API write them.
"""

from __future__ import annotations

from .junit import junit_xml
from .outcome import IterationOutcome, iteration_outcomes
from .summary import MARKER_PREFIX, marker, summary_markdown

__all__ = [
    "MARKER_PREFIX",
    "IterationOutcome",
    "iteration_outcomes",
    "junit_xml",
    "marker",
    "summary_markdown",
]
