"""A table for people that fits the terminal: the most important columns that fit at their natural width, the
text columns cut short before any column is left out (``--columns`` chooses them instead)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import typer

from synctool.errors import one_of

#: columns whose text may be cut short to fit; the others keep their width or are left out
TEXT_COLUMNS = {
    "message", "error", "last_error", "outcome", "title", "name", "label", "emails", "tags", "note", "values",
    "description", "what", "entity", "why", "can", "credentials",
}  # fmt: skip
MIN_TEXT_WIDTH = 10
#: the text columns that say what happened (a failed record's error): they widen before the others
FIRST_TO_GROW = {"message", "error", "last_error", "why", "credentials"}
GAP = 2  # between two columns: a space of padding, then Rich's (invisible) separator

#: one row of a table: a column's name -> its value (shown as text; None as nothing)
Row = Mapping[str, object]


def pick_columns(rows: Sequence[Row], columns: list[str], width: int, chosen: str | None = None) -> dict[str, int | None]:
    """The columns to show and their widths: ``chosen`` (checked against what the rows hold; Rich sizes
    them), else the most important of ``columns`` (in their order of importance) that fit ``width`` at their
    natural width, text columns cut to what is left but never below ``MIN_TEXT_WIDTH``."""
    if chosen:
        wanted = [c.strip() for c in chosen.split(",") if c.strip()]
        known = list(dict.fromkeys([*columns, *(k for r in rows for k in r)]))
        for col in wanted:
            one_of(col, known, "column")
        return dict.fromkeys(wanted)
    natural = {c: max([len(c)] + [len(str(r.get(c) if r.get(c) is not None else "")) for r in rows[:200]]) for c in columns}
    widths: dict[str, int] = {}
    used = -GAP  # no gap before the first column
    for col in columns:
        need = min(natural[col], MIN_TEXT_WIDTH) if col in TEXT_COLUMNS else natural[col]
        if used + GAP + need > width:
            break  # a less important column never takes the place of a more important one
        widths[col] = need
        used += GAP + need
    # what is left goes first to the column that says what happened, then to the other text columns
    for col in [c for c in widths if c in FIRST_TO_GROW]:
        extra = min(natural[col] - widths[col], width - used)
        widths[col] += max(extra, 0)
        used += max(extra, 0)
    growing = [c for c in widths if c in TEXT_COLUMNS]
    while growing and used < width:  # what is left widens the text columns, a character each in turn
        for col in list(growing):
            if used >= width or widths[col] >= natural[col]:
                growing.remove(col)
                continue
            widths[col] += 1
            used += 1
    return {c: widths[c] for c in columns if c in widths} or {columns[0]: None}


def printable(text: str) -> str:
    """``text`` with its control characters (a terminal's escape sequences) shown as ``\x1b``, never sent raw."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else repr(ch)[1:-1] for ch in text)


def table(rows: Sequence[Row], columns: list[str], title: str | None = None, *, chosen: str | None = None) -> None:
    """A Rich table for people that fits the terminal (``--json`` output bypasses this): ``columns`` in
    their order of importance; text columns are cut short before any column is left out."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    shown = pick_columns(rows, columns, console.width, chosen)
    t = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for col, width in shown.items():
        t.add_column(col, overflow="ellipsis", no_wrap=True, min_width=width, max_width=width)
    for row in rows:
        # Text, not markup: a donor named "Jane [/b]" or "[link=...]" is printed as typed, control characters shown
        t.add_row(*[Text(printable("" if row.get(c) is None else str(row.get(c)))) for c in shown])
    console.print(t)
    if not rows:
        typer.echo("(none)")
