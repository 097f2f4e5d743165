"""``@action``: a command that changes something joins the staff actions log, as the staff page's and the admin
API's changes do (`synctool syncs actions`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from synctool.console.context import ctx_obj
from synctool.errors import SynctoolError

#: where a recorded field comes from: a command's argument by its parameter's name, or a function of its arguments
ArgumentSource = str | Callable[[dict[str, object]], object] | None


def action(
    target: ArgumentSource = None, *, note: ArgumentSource = None, when: Callable[[dict[str, object]], object] | None = None
) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Marks a command that changes something, so each run of it joins the staff actions log that the staff
    page and the admin API write (`synctool syncs actions`): who ran it (the OS user), role and ``via`` ``cli``,
    the command (``jobs retry``), its target (the argument ``target`` names, or what it makes of the arguments),
    the note (``note``'s, alike) and the outcome: ``done``, ``refused: <why>`` or ``failed (exit N)``. Not
    written: a run with ``--dry-run``, or one that ``when(arguments)`` says changes nothing (a show-or-set
    command that only shows).

    The one place a CLI action is recorded: a command names what it acts on, never how it is written."""

    def mark(fn: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(fn)
        def run(*args: object, **kwargs: object) -> object:
            ctx = kwargs.get("ctx")  # click's context (typer hands over its base class, not ``typer.Context``)
            if ctx is None or kwargs.get("dry_run") or (when is not None and not when(kwargs)):
                return fn(*args, **kwargs)
            note_text, target_text = _argument_text(note, kwargs), _argument_text(target, kwargs)
            try:
                result = fn(*args, **kwargs)
            except SynctoolError as exc:
                _record(ctx, target_text, note_text, f"refused: {exc}")
                raise
            except typer.Exit as exc:
                _record(ctx, target_text, note_text, "done" if not exc.exit_code else f"failed (exit {exc.exit_code})")
                raise
            _record(ctx, target_text, note_text, "done")
            return result

        run.synctool_action = True  # type: ignore[attr-defined]  # (tests list the commands that are actions)
        return run

    return mark


def _argument_text(source: ArgumentSource, arguments: dict[str, object]) -> str | None:
    """The text ``source`` gives for this run's arguments; None when it gives nothing (a list joined by commas)."""
    if source is None:
        return None
    value = source(arguments) if callable(source) else arguments.get(source)
    if value is None or value == "" or value == [] or value == ():
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _record(ctx: Any, target: str | None, note: str | None, outcome: str) -> None:
    """One row of the staff actions log for the running command, when the database can be opened (a command
    that failed because it cannot has nothing to record in)."""
    obj = ctx_obj(ctx)
    if obj.log_action is None:
        return
    names = []
    at: Any = ctx
    while at.parent is not None:
        names.append(at.info_name)
        at = at.parent
    try:
        obj.log_action(obj.db, " ".join(reversed(names)), target, note, outcome)
    except SynctoolError:
        pass
