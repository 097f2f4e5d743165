"""``@host_wide``: a command cron runs does its work for every organisation of a host when none is named.

On a host with organisations, a command marked ``@host_wide`` and run with no ``--org`` (and no ``$SYNCTOOL_ORG``)
runs once for each organisation, each with a context of its own (its Runtime, its database, closed after), then
once for the single install when its config is there (``ops.host.parts``). Each part's output is today's output of
the command for it, under a header line naming it (``== riverside ==``; none when the part printed nothing, so cron
stays quiet); with ``--json`` the parts' outputs become one JSON object keyed by organisation (the single install's
key is ``(single install)``). A part that fails is reported in its part as the command would report it and stops
no other; the exit code is the worst of the parts'. Anywhere else (``--org``, or a host without organisations) the
command runs as it always has. The parts and their failures are ``ops.host``'s; this module only words them.
"""

from __future__ import annotations

import functools
import io
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from itertools import chain
from typing import TYPE_CHECKING, Any, TextIO

import typer

from synctool.console import AppContext, ctx_obj

if TYPE_CHECKING:
    from synctool.runtime import Runtime

#: what a command's arguments become for one part (``backup``: its file), by the part's organisation (None: the
#: single install)
Adapt = Callable[[str | None, dict[str, Any]], dict[str, Any]]


def host_parts(ctx: Any) -> list[str | None]:
    """The parts of a host-wide run of the running command (organisations by name, None for the single install), or
    none when it runs as today's command: an organisation is named, or the host has no organisations."""
    from synctool.ops.host import parts

    obj = ctx_obj(ctx)
    if obj.environ is None or obj.org is not None or obj.environ.get("SYNCTOOL_ORG"):  # (the root reads the environment)
        return []
    return parts(obj.environ, obj.config_path)


def part_runtime(ctx: Any, name: str | None) -> Runtime:
    """Part ``name``'s own Runtime: organisation ``name``'s, or the single install's (None)."""
    from synctool.ops.host import part_environ
    from synctool.runtime import Runtime

    obj = ctx_obj(ctx)
    environ = part_environ(obj.environ or {}, name)
    return Runtime.from_environ(None if name is not None else obj.config_path, environ, org=name, transports=obj.transports)


class _Capture(io.StringIO):
    """A part's output, kept until the part ends; a terminal stays a terminal to the command (`poll` says more)."""

    def __init__(self, real: TextIO) -> None:
        super().__init__()
        self._real = real

    def isatty(self) -> bool:
        return self._real.isatty()


@contextmanager
def _as_part(ctx: Any, name: str | None) -> Iterator[tuple[_Capture, _Capture]]:
    """The command's context made part ``name``'s for the block (its database closed after), its output kept."""
    from synctool.ops.host import part_environ

    root = ctx.find_root()
    saved: AppContext = ctx_obj(ctx)
    root.obj = AppContext(
        config_path=saved.config_path if name is None else None,
        org=name,
        environ=part_environ(saved.environ or {}, name),
        transports=saved.transports,
        log_action=saved.log_action,
    )
    out, err = _Capture(sys.stdout), _Capture(sys.stderr)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            yield out, err
    finally:
        part, root.obj = root.obj, saved
        if part._db is not None:
            part._db.close()


def said(name: str, out: str, err: str, *, as_json: bool) -> None:
    """One part's output under its header line (none when it said nothing); with ``--json`` only its lines on
    stderr, under the header there (its JSON is joined with the others')."""
    if as_json:
        if err:
            typer.echo(f"== {name} ==\n{err}", err=True, nl=False)
        return
    if out or err:
        typer.echo(f"== {name} ==")
    if out:
        typer.echo(out, nl=False)
    if err:
        typer.echo(err, err=True, nl=False)


def run_parts(
    ctx: Any,
    names: list[str | None],
    call: Callable[[str | None], None],
    *,
    as_json: bool,
    more: Callable[[], None] | None = None,
) -> None:
    """``call(name)`` for each part in its own context (``ops.host.run_each``), each part's output said as it ends,
    then ``more()`` as the host's own part (`doctor`'s host lines); exits with the worst part's code."""
    from synctool.ops.host import HOST, label, run_each, worst

    kept: dict[str | None, tuple[_Capture, _Capture]] = {}
    joined: dict[str, object] = {}
    codes: list[int] = []

    def run(name: str | None) -> int:
        with _as_part(ctx, name) as kept[name]:
            try:
                call(name)
            except typer.Exit as exc:
                return exc.exit_code or 0
        return 0

    def run_host(name: str | None) -> int:
        assert more is not None
        out, err = kept[name] = (_Capture(sys.stdout), _Capture(sys.stderr))
        with redirect_stdout(out), redirect_stderr(err):
            try:
                more()
            except typer.Exit as exc:
                return exc.exit_code or 0
        return 0

    for part in chain(run_each(names, run), run_each([HOST], run_host) if more is not None else ()):
        out, err = kept.pop(part.name)
        if part.error is not None:
            err.write(f"Error: {part.error}\n")
        codes.append(part.code if part.error is not None else (part.value or 0))
        shown = label(part.name)
        said(shown, out.getvalue(), err.getvalue(), as_json=as_json)
        if as_json:
            joined[shown] = _json_of(out.getvalue(), part.error)
    if as_json:
        sys.stdout.write(json.dumps(joined, indent=2, default=str) + "\n")
    code = worst(codes)
    if code:
        raise typer.Exit(code)


def _json_of(out: str, error: str | None) -> object:
    """A part's JSON: what it printed, else its error (``{"error": ...}``), else null."""
    if out.strip():
        try:
            return json.loads(out)
        except ValueError:
            return {"output": out}
    return {"error": error} if error is not None else None


def host_wide(
    adapt: Adapt | None = None, *, host: Callable[[Mapping[str, Any]], None] | None = None
) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Marks a command cron runs: with no organisation named on a host with organisations, it runs for each part
    (``run_parts``), its arguments made each part's by ``adapt``; ``host(arguments)`` then says the host's own part
    (`doctor`'s host lines). A group's callback runs so only when no subcommand is named (`reconcile`, not
    `reconcile last`)."""

    def mark(fn: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> object:
            ctx = kwargs.get("ctx")
            if ctx is None or getattr(ctx, "invoked_subcommand", None) is not None:
                return fn(*args, **kwargs)
            names = host_parts(ctx)
            if not names:
                return fn(*args, **kwargs)

            def call(name: str | None) -> None:
                fn(*args, **(adapt(name, kwargs) if adapt is not None else kwargs))

            more = None if host is None else functools.partial(host, kwargs)
            run_parts(ctx, names, call, as_json=bool(kwargs.get("as_json")), more=more)
            return None

        return run

    return mark
