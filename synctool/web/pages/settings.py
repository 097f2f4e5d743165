"""Settings (``/admin/settings``): the sync mode, donor matching, the alert recipients and each platform in use's
settings, as `synctool sync-mode` and `synctool settings ...` show and change them, each with its form."""

from __future__ import annotations

import typing
from typing import TypedDict

from pydantic.fields import FieldInfo

from synctool import platforms
from synctool.errors import NotFound
from synctool.ops import preview
from synctool.ops import settings as setting_ops
from synctool.platforms import Setting
from synctool.web.pages import forms
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.pages.forms import FormProblem
from synctool.web.request import StaffRequest


class FormField(TypedDict):
    """One field of a platform setting's form: a yes/no choice, a list of choices or text."""

    name: str
    form_name: str
    label: str
    kind: str
    choices: list[tuple[str, str]] | None
    required: bool
    value: str


class PlatformSetting(TypedDict):
    """One setting shown as a form of its fields: its title and description in words, what it is now (each
    part a label and the value in words: one unlabelled part for a setting that is on or off) and its form."""

    platform: str
    name: str
    title: str
    description: str
    now: list[tuple[str, str]]
    fields: list[FormField]


class SettingsPage(TypedDict):
    mode: preview.SyncMode
    matching: setting_ops.DonorMatching
    recipients: list[str]
    #: the core settings the page shows with forms of their own, by name: their title and description, as declared
    core: dict[str, Setting]
    platform_settings: list[PlatformSetting]


def form_field(name: str, info: FieldInfo, value: object) -> FormField:
    """One field of a platform setting's body model, as its form shows it: a yes/no choice, a list of choices
    (a ``Literal``) or text, with its description and the value it holds now."""
    kinds = [a for a in typing.get_args(info.annotation) if a is not type(None)] or [info.annotation]
    kind, choices = "text", None
    if bool in kinds:
        kind, choices = "choice", [("on", "on"), ("off", "off")]
        value = None if value is None else ("on" if value else "off")
    elif typing.get_origin(kinds[0]) is typing.Literal:
        kind, choices = "choice", [(str(c), str(c)) for c in typing.get_args(kinds[0])]
    words, description = name.replace("_", " "), info.description
    label = description if description and words in description.lower() else words + (f" ({description})" if description else "")
    return FormField(name=name, form_name=f"f_{name}", label=label, kind=kind, choices=choices,
                     required=info.is_required(), value="" if value is None else str(value))  # fmt: skip


def platform_settings(request: StaffRequest) -> list[PlatformSetting]:
    """The monthly donors' settings, then each platform in use's, with their values now and their forms' fields."""
    listed = []
    for name, setting in _owned(request):
        value = dict(setting.read(request.conn))
        model_fields = setting.body().model_fields
        fields = [form_field(n, f, value.get(n)) for n, f in model_fields.items()]
        labels = {n: f.description or n.replace("_", " ") for n, f in model_fields.items()}
        listed.append(
            PlatformSetting(
                platform=name,
                name=setting.name,
                title=setting.title,
                description=setting.description,
                now=now_in_words(value, labels),
                fields=fields,
            )
        )
    return listed


def now_in_words(value: dict[str, object], labels: dict[str, str]) -> list[tuple[str, str]]:
    """A setting's value as the page says it: a switch is just ``on`` or ``off`` ("Now: on."), anything else
    each part by its field's description (or its name in words) with ``not set`` for nothing and yes or no."""
    if len(value) == 1 and isinstance(next(iter(value.values())), bool):
        return [("", "on" if next(iter(value.values())) else "off")]

    def said(v: object) -> str:
        return "not set" if v is None or v == "" else "yes" if v is True else "no" if v is False else str(v)

    return [(labels.get(k, k.replace("_", " ")), said(v)) for k, v in value.items()]


def _owned(request: StaffRequest) -> list[tuple[str, Setting]]:
    """The settings shown as a form of their fields, each with whose it is: the monthly donors' two (the core's),
    then each platform in use's."""
    owned = [("monthly donors", s) for s in setting_ops.plan_settings(lambda: request.rt)]
    return owned + [(p.name, s) for p in platforms.in_use(request.rt.config) for s in p.settings]


def settings(request: StaffRequest) -> ViewResult:
    """The settings as `synctool sync-mode`, `synctool settings donor-matching`, `... alert-recipients` and each
    platform's `synctool settings NAME` show them, each with its form."""
    return ViewResult(
        SettingsPage(
            mode=preview.set_mode(request.conn),
            matching=setting_ops.donor_matching(request.conn, request.rt),
            recipients=setting_ops.alert_recipients(request.conn)["emails"],
            core={s.name: s for s in setting_ops.core(lambda: request.rt) if s.name in ("donor-matching", "alert-recipients")},
            platform_settings=platform_settings(request),
        )
    )


def set_sync_mode(request: StaffRequest) -> ActionResult:
    """`synctool sync-mode live|preview`: going live queues the previewed jobs to run for real."""
    body = forms.read(preview.ModeBody, {"mode": forms.field(request, "mode")}, {"mode": "sync mode"})
    mode = preview.set_mode(request.conn, body)
    message = f"The sync mode is {mode['mode']}."
    if mode["queued_for_real"]:
        message += f" {mode['queued_for_real']} previewed job(s) are queued to run for real at the next drain."
    return ActionResult(message, mode["mode"])


def set_donor_matching(request: StaffRequest) -> ActionResult:
    """`synctool settings donor-matching POLICY` (``PATCH /api/settings/donor-matching``)."""
    body = forms.read(setting_ops.DonorMatchingBody, {"policy": forms.field(request, "policy")}, {"policy": "donor matching"})
    matching = setting_ops.donor_matching(request.conn, request.rt, body)
    return ActionResult(f"Donor matching is {matching['policy']}.", matching["policy"])


def set_alert_recipients(request: StaffRequest) -> ActionResult:
    """`synctool settings alert-recipients EMAIL...` (none: `--clear`)."""
    emails = (request.form.get("emails") or "").replace(",", " ").split()
    body = forms.read(setting_ops.RecipientsBody, {"emails": emails}, {"emails": "e-mail addresses"})
    recipients = ", ".join(setting_ops.alert_recipients(request.conn, body)["emails"]) or "no one"
    return ActionResult(f"The failure digest goes to {recipients}.", recipients)


def set_platform_setting(request: StaffRequest) -> ActionResult:
    """A platform's `synctool settings NAME ...` (``PATCH /api/settings/NAME``): the fields given, checked with
    the setting's body model."""
    name = request.path["name"]
    setting = next((s for _, s in _owned(request) if s.name == name), None)
    if setting is None:
        raise NotFound(f"no setting {name} of a platform in use")
    model = setting.body()
    given = {n: forms.field(request, f"f_{n}") for n in model.model_fields if forms.field(request, f"f_{n}") is not None}
    if not given:
        raise FormProblem("Fill in at least one of the setting's fields.")
    labels = {n: form_field(n, f, None)["label"] for n, f in model.model_fields.items()}
    saved = dict(setting.write(request.conn, forms.read(model, given, labels, prefix="f_")))
    values = ", ".join(f"{k} {'on' if v is True else 'off' if v is False else v}" for k, v in saved.items())
    return ActionResult(f"{name}: {values}.", name)
