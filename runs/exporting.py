"""Tables written out as CSV or JSON: the downloads of the pages and the API.

A `Table` is a header and rows of plain values (text, numbers, booleans, None); what each
export holds is built in `runs.reading.exports`. Both formats write the same rows, so a
JSON download is the CSV's content with its types kept.

CSV is opened by spreadsheets, which run a cell beginning with `=`, `+`, `-` or `@` as a
formula (OWASP "CSV injection"): eval ids, condition names and labels come from agents'
folders, so every text cell beginning so (or with a tab or carriage return, which some
spreadsheets skip before reading the formula) gets a leading `'`. Numbers are written as
numbers, never prefixed: −0.25 stays a number a spreadsheet can sum.
"""

from __future__ import annotations

import csv
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

#: What a cell may hold.
Value = str | int | float | bool | None

#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Table:
    """One download: its file name without extension, its header and its rows."""

    name: str
    columns: Sequence[str]
    rows: Iterable[Sequence[Value]]


def spreadsheet_safe(text: str) -> str:
    """`text` as a spreadsheet shows it and never runs it: a `'` before a formula's start."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_cell(value: Value) -> str:
    """One cell as CSV text: numbers as Python writes them, booleans as true/false, None
    (and NaN or infinity, which no spreadsheet reads alike) empty, text made safe."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return spreadsheet_safe(str(value))


class _Line:
    """A file-like target for csv.writer that hands back the line just written."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text = text


def csv_lines(table: Table) -> Iterator[str]:
    """The table as CSV, a line at a time (header first), for a StreamingHttpResponse.

    A UTF-8 byte-order mark first, so spreadsheets that guess the encoding (Excel) read
    non-ASCII names right; `csv` and pandas read past it with encoding "utf-8-sig".
    """
    line = _Line()
    writer = csv.writer(line, lineterminator="\r\n")
    writer.writerow([spreadsheet_safe(str(column)) for column in table.columns])
    yield "\ufeff" + line.text
    for row in table.rows:
        writer.writerow([csv_cell(value) for value in row])
        yield line.text


def json_value(value: Value) -> Value:
    """A value JSON can hold: NaN and infinity (not JSON) become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_document(table: Table) -> dict[str, Any]:
    """The table as JSON: its columns and one object per row, keyed by column."""
    columns = list(table.columns)
    return {
        "columns": columns,
        "rows": [
            dict(zip(columns, (json_value(v) for v in row), strict=True)) for row in table.rows
        ],
    }


def download_name(*parts: str | int, extension: str) -> str:
    """A file name from names agents chose: ASCII letters, digits, `.`, `_` and `-` only.

    "café helper", 3, "matrix" → "cafe-helper-3-matrix.csv". A name with nothing left
    ("日本") falls back to "export"; never a path, a quote or a leading dot.
    """
    words = []
    for part in parts:
        ascii_text = unicodedata.normalize("NFKD", str(part)).encode("ascii", "ignore").decode()
        word = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text).strip(".-_")
        if word:
            words.append(word)
    stem = re.sub(r"-{2,}", "-", "-".join(words))[:120].strip(".-_") or "export"
    return f"{stem}.{extension}"


#: The formats a table downloads as, by the extension its address ends with.
FORMATS = ("csv", "json")


def download_response(table: Table, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """The table as an attachment: CSV streamed a line at a time, or one JSON document."""
    filename = download_name(table.name, extension=fmt)
    response: HttpResponse | StreamingHttpResponse
    if fmt == "json":
        response = JsonResponse(
            json_document(table), json_dumps_params={"indent": 2, "ensure_ascii": False}
        )
    else:
        response = StreamingHttpResponse(
            (line.encode() for line in csv_lines(table)), content_type="text/csv; charset=utf-8"
        )
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
