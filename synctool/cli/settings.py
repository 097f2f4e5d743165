"""`synctool settings`: the run-time settings operators change (spec: Settings): the core's
(``ops.settings.core``), then each platform's (``Platform.settings``). Each is a ``Setting`` row, and one
function makes the command of any."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Optional

import typer

from synctool.console import AsJson, action, ctx_obj, render, sub_app
from synctool.errors import one_of
from synctool.platforms import Setting
from synctool.runtime import Runtime

app = sub_app(
    "Run-time settings, the core's and each platform's. The core's: CRM environment, alert recipients, refund policy, "
    "soft credits, donor matching and updates, monthly plans' report changes and chat webhook; each platform in `synctool platforms` names its own."
)


@dataclass(frozen=True)
class Word:
    """What a setting's command takes: an argument ``name`` (an option with ``option``) described by ``help``,
    that fills the body's ``field`` (the same name unless said); ``to`` turns what was typed into the field's
    value; ``clear``, the help of a ``--clear`` that empties a list typed as several arguments."""

    name: str
    help: str
    field: str = ""
    to: Callable[[Any], Any] | None = None
    clear: str | None = None
    option: bool = False
    #: what was typed is a secret (a webhook URL's path is its token): the staff actions log notes its host alone
    secret: bool = False

    def parameters(self) -> list[inspect.Parameter]:
        if self.option:
            default = typer.Option(None, f"--{self.name.replace('_', '-')}", help=self.help, show_default=False)
        else:
            default = typer.Argument(None, help=f"{self.help}; omit to show", show_default=False)
        typed: Any = Optional[list[str]] if self.clear else Optional[str]  # noqa: UP045
        found = [inspect.Parameter(self.name, _KIND, default=default, annotation=typed)]
        if self.clear:
            found.append(
                inspect.Parameter("clear", _KIND, default=typer.Option(False, "--clear", help=self.clear), annotation=bool)
            )
        return found

    def typed(self, arguments: dict[str, Any]) -> Any:
        return [] if self.clear and arguments.get("clear") else arguments.get(self.name)


_KIND = inspect.Parameter.POSITIONAL_OR_KEYWORD
#: the Runtime of the setting's command that is running: a core setting's value falls back on its config
RUNTIME: ContextVar[Runtime] = ContextVar("RUNTIME")


def _on_off(state: str) -> bool:
    one_of(state, ("on", "off"), "state")
    return state == "on"


def _one_url(given: list[str]) -> str | None:
    """``plans-chat-webhook URL`` (``--clear``: none)."""
    if len(given) > 1:
        from synctool.errors import InvalidInput

        raise InvalidInput("give one URL", "synctool settings plans-chat-webhook https://hooks.slack.com/services/...")
    return given[0] if given else None


#: the words of the core's settings, as their commands have always taken them
CORE_WORDS = {
    "crm-environment": Word("name", "production or sandbox", field="environment"),
    "alert-recipients": Word("emails", "e-mail addresses", clear="remove every recipient"),
    "refund-policy": Word("policy", "adjust, delete or flag"),
    "soft-credits": Word("state", "on or off", field="enabled", to=_on_off),
    "donor-matching": Word("policy", "review, auto or email"),
    "donor-updates": Word("policy", "review, add or off"),
    "plans-report-changes": Word("state", "on or off", field="enabled", to=_on_off),
    "plans-chat-webhook": Word(
        "url", "an https URL of a Slack or Teams incoming webhook", to=_one_url, clear="send no chat messages", secret=True
    ),
}


def fields(model: Any) -> tuple[Word, ...]:
    """A platform's setting takes its body's fields, each described by its description: one as an argument,
    several as options."""
    found = model.model_fields
    return tuple(Word(n, f.description or n.replace("_", " "), option=len(found) > 1) for n, f in found.items())


def setting_command(setting: Setting, word: Word | None = None) -> None:
    """`synctool settings NAME` for a ``Setting``: it takes ``word`` (the staff actions log notes what was typed)
    or else its body's ``fields`` (noted ``field=value``); named alone, it shows the value."""
    model = setting.body()
    words = (word,) if word else fields(model)
    where = "options" if any(w.option for w in words) else "arguments"

    def typed(arguments: dict[str, Any]) -> dict[str, Any]:
        """What was typed, by the word's name: empty when the command only shows."""
        return {w.name: w.typed(arguments) for w in words if w.typed(arguments) is not None}

    def note(arguments: dict[str, Any]) -> Any:
        given = typed(arguments)
        if word and word.secret and given.get(word.name):
            from synctool.notices import host

            values = given[word.name] if isinstance(given[word.name], list) else [given[word.name]]
            return " ".join(f"host {host(str(v)) or '?'}" for v in values)
        return given.get(word.name) if word else " ".join(f"{name}={value}" for name, value in given.items())

    def run(ctx: typer.Context, as_json: bool = False, **arguments: Any) -> None:
        from synctool.validation import parse

        obj = ctx_obj(ctx)
        given = typed(arguments)
        body = {w.field or w.name: w.to(given[w.name]) if w.to else given[w.name] for w in words if w.name in given}
        running = RUNTIME.set(obj.rt)
        try:
            value = setting.write(obj.db, parse(model, body, where=where)) if body else setting.read(obj.db)
        finally:
            RUNTIME.reset(running)
        render(dict(value), as_json)

    params = [
        inspect.Parameter("ctx", _KIND, annotation=typer.Context),
        *(p for w in words for p in w.parameters()),
        inspect.Parameter("as_json", _KIND, default=False, annotation=AsJson),
    ]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    run.__doc__ = f"{setting.help}\n\nExample: synctool settings {setting.name} {setting.example}".rstrip()
    app.command(setting.name)(action(note=note, when=typed)(run))


def _settings() -> None:
    from synctool import platforms
    from synctool.ops.settings import core

    rows = core(RUNTIME.get)
    for setting in rows:
        setting_command(setting, CORE_WORDS[setting.name])
    for name, setting in platforms.settings().items():
        if name not in CORE_WORDS:  # a platform never takes a core setting's name
            setting_command(setting)


_settings()
