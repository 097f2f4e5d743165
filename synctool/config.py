"""Deployment configuration: ``config.yaml`` plus environment overrides.

Where things live is decided here and only here: the config file is ``--config``, else
``$SYNCTOOL_CONFIG``, else ``~/.config/synctool/config.yaml``; the database is ``$SYNCTOOL_DB``, else the
file's ``database`` key, else ``~/.local/share/synctool/synctool.db``. A default config path that does not
exist means "all defaults"; a path the user named that does not exist is an error.

Every platform base URL can be overridden by environment (``CRM_API_BASE_URL``, ...), which is how
the demo and the tests point synctool at the local fakes. Secrets are not here: see ``secrets.py``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Optional, Union, get_args, get_origin, get_type_hints

import yaml

from synctool.errors import ConfigError

DEFAULT_CONFIG = Path("~/.config/synctool/config.yaml").expanduser()
DEFAULT_DB = Path("~/.local/share/synctool/synctool.db").expanduser()


def _field(default: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None,
           choices: tuple[str, ...] | None = None) -> Any:
    """A config field with its bounds, checked by ``_validate``."""
    meta = {"ge": ge, "gt": gt, "le": le, "choices": choices}
    if isinstance(default, _Section):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return field(default=default, metadata=meta)


class _Section:
    """A config section: a dataclass whose fields are checked against their types and bounds."""


@dataclass
class ReceiverConfig(_Section):
    host: str = "127.0.0.1"
    port: int = _field(8787, ge=1, le=65535)
    max_body_bytes: int = _field(1024 * 1024, ge=1024)
    admin_api: bool = False


@dataclass
class WebhooksConfig(_Section):
    #: the exact URL registered with Square; its signature covers it
    pos_notification_url: Optional[str] = None
    #: Stripe and portal signatures older than this are refused
    tolerance_s: int = _field(300, ge=1)


@dataclass
class ProfileDefaults(_Section):
    """Fields sent on every constituent synctool creates (spec: default profile fields)."""

    is_org: bool = False
    constituent_contact_type_name: str = "Primary"
    addressee_format: str = "{first_name} {last_name}"
    salutation_format: str = "{first_name}"


@dataclass
class CrmConfig(_Section):
    base_url: str = "https://api.littlegreenlight.com/api/v1"
    sandbox_base_url: Optional[str] = None
    environment: str = _field("production", choices=("production", "sandbox"))
    #: the CRM's limit for the whole account: requests in any window
    rate_limit_requests: int = _field(300, ge=1)
    rate_limit_window_s: float = _field(300.0, gt=0)
    #: the part of that limit synctool may use; the rest is left to the account's other integrations
    share_requests: int = _field(270, ge=1)
    min_interval_ms: float = _field(1100.0, ge=0)
    #: added to min_interval_ms so the gaps stay above it as the CRM receives them (send jitter)
    send_margin_ms: float = _field(20.0, ge=0)
    #: constituents per request when the CRM mirror is loaded or refreshed
    mirror_page_size: int = _field(250, ge=1, le=1000)
    timeout_s: float = _field(30.0, gt=0)
    max_retries: int = _field(3, ge=0, le=10)
    retry_base_ms: float = _field(1000.0, ge=0)
    profile_defaults: ProfileDefaults = _field(ProfileDefaults())


@dataclass
class DonationsConfig(_Section):
    base_url: str = "https://api.givebutter.com/v1"
    poll_overlap_minutes: int = _field(60, ge=0)
    poll_first_lookback_hours: int = _field(24, ge=1)
    default_fund_id: Optional[int] = None
    default_campaign_id: Optional[int] = None


@dataclass
class PosConfig(_Section):
    base_url: str = "https://connect.squareup.com"
    square_version: str = "2026-08-19"


@dataclass
class MailingConfig(_Section):
    #: when unset, derived from the API key's data-centre suffix (``...-us14``)
    base_url: Optional[str] = None


@dataclass
class QueueConfig(_Section):
    concurrency: int = _field(3, ge=1, le=3)
    max_attempts: int = _field(3, ge=1)
    retry_delay_ms: float = _field(5000.0, ge=0)
    lease_seconds: float = _field(300.0, ge=1)


@dataclass
class SmtpConfig(_Section):
    host: Optional[str] = None
    port: int = _field(587, ge=1, le=65535)
    username: Optional[str] = None
    starttls: bool = True
    sender: str = "synctool@localhost"


@dataclass
class Config(_Section):
    database: Optional[str] = None
    log_file: Optional[str] = None
    #: the organisation's IANA time zone (``America/New_York``): the day a gift is dated when the
    #: platform does not say where it was given; UTC when unset
    timezone: Optional[str] = None
    receiver: ReceiverConfig = _field(ReceiverConfig())
    webhooks: WebhooksConfig = _field(WebhooksConfig())
    crm: CrmConfig = _field(CrmConfig())
    donations: DonationsConfig = _field(DonationsConfig())
    pos: PosConfig = _field(PosConfig())
    mailing: MailingConfig = _field(MailingConfig())
    queue: QueueConfig = _field(QueueConfig())
    smtp: SmtpConfig = _field(SmtpConfig())

    #: where the file was read from, for messages ("defaults" when there was none)
    source: str = field(default="defaults", compare=False)

    @property
    def db_path(self) -> Path:
        env = os.environ.get("SYNCTOOL_DB")
        if env:
            return Path(env).expanduser()
        if self.database:
            return Path(self.database).expanduser()
        return DEFAULT_DB


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _convert(value: Any, kind: Any, meta: dict, key: str, source: str) -> Any:
    optional = get_origin(kind) is Union and type(None) in get_args(kind)
    if optional:
        if value is None:
            return None
        kind = next(a for a in get_args(kind) if a is not type(None))
    if isinstance(kind, type) and issubclass(kind, _Section):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(key, source, "must be a mapping of keys to values")
        return _build(kind, value, key + ".", source)
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, str))
    if not ok:
        raise ConfigError(key, source, f"expected {_TYPE_NAMES[kind]}, got {value!r}")
    value = kind(value)
    if meta.get("choices") and value not in meta["choices"]:
        raise ConfigError(key, source, "must be one of " + ", ".join(meta["choices"]) + f", got {value!r}")
    for bound, test, word in (("ge", lambda v, b: v >= b, "at least"), ("gt", lambda v, b: v > b, "more than"),
                              ("le", lambda v, b: v <= b, "at most")):
        if meta.get(bound) is not None and not test(value, meta[bound]):
            raise ConfigError(key, source, f"must be {word} {meta[bound]}, got {value!r}")
    return value


def _build(cls: type, data: dict, prefix: str, source: str) -> Any:
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls) if f.name != "source"}
    for name in data:
        if name not in known:
            raise ConfigError(prefix + str(name), source, "unknown key")
    values = {name: _convert(data[name], hints[name], dict(known[name].metadata), prefix + name, source)
              for name in data}
    return cls(**values)


# environment variable -> (section, key, parser)
_ENV_OVERRIDES: dict[str, tuple[str, str, type]] = {
    "CRM_API_BASE_URL": ("crm", "base_url", str),
    "CRM_ENVIRONMENT": ("crm", "environment", str),
    "CRM_RATE_LIMIT_REQUESTS": ("crm", "rate_limit_requests", int),
    "CRM_RATE_LIMIT_WINDOW_S": ("crm", "rate_limit_window_s", float),
    "CRM_SHARE_REQUESTS": ("crm", "share_requests", int),
    "CRM_MIN_INTERVAL_MS": ("crm", "min_interval_ms", float),
    "CRM_SEND_MARGIN_MS": ("crm", "send_margin_ms", float),
    "CRM_RETRY_BASE_MS": ("crm", "retry_base_ms", float),
    "CRM_TIMEOUT_S": ("crm", "timeout_s", float),
    "DONATIONS_API_BASE_URL": ("donations", "base_url", str),
    "POS_API_BASE_URL": ("pos", "base_url", str),
    "MAILING_API_BASE_URL": ("mailing", "base_url", str),
    "POS_WEBHOOK_NOTIFICATION_URL": ("webhooks", "pos_notification_url", str),
    "QUEUE_RETRY_DELAY_MS": ("queue", "retry_delay_ms", float),
}


def config_path(explicit: str | os.PathLike | None = None) -> tuple[Path, bool]:
    """The config path and whether the user named it (so that its absence is an error)."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = os.environ.get("SYNCTOOL_CONFIG")
    if env:
        return Path(env).expanduser(), True
    return DEFAULT_CONFIG, False


def load_config(explicit: str | os.PathLike | None = None) -> Config:
    """Read and validate the configuration; raise ConfigError naming the key and where it was read."""
    path, named = config_path(explicit)
    data: dict[str, Any] = {}
    source = "defaults"
    if path.exists():
        source = str(path)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark else "file"
            raise ConfigError(where, source, f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
        except OSError as exc:
            raise ConfigError("config", source, f"cannot be read: {exc.strerror}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError("(top level)", source, "must be a mapping of keys to values")
        data = loaded
    elif named:
        raise ConfigError("config", str(path), "file not found (run `synctool init` to create one)")

    config = _build(Config, data, "", source)
    config.source = source
    if config.timezone:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(config.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError("timezone", source, f"unknown time zone {config.timezone!r} "
                              "(an IANA name such as America/New_York)") from None

    for env, (section, key, parse) in _ENV_OVERRIDES.items():
        raw = os.environ.get(env)
        if raw is None or raw == "":
            continue
        try:
            value = parse(raw)
        except ValueError:
            raise ConfigError(env, "environment", f"expected {_TYPE_NAMES[parse]}, got {raw!r}") from None
        part = getattr(config, section)
        meta = dict(next(f for f in fields(part) if f.name == key).metadata)
        setattr(part, key, _convert(value, get_type_hints(type(part))[key], meta, env, "environment"))
    return config


STARTER_CONFIG = """\
# synctool configuration. Every key is optional; see config.example.yaml for all of them.
# Secrets (API keys, webhook secrets) do not belong here: use `synctool crm config --api-key`
# (keyring) or environment variables such as CRM_API_KEY and POS_WEBHOOK_SIGNATURE_KEY.
database: {database}
receiver:
  host: 127.0.0.1
  port: 8787
webhooks:
  # the exact URL you register with Square (its signature covers it)
  pos_notification_url: null
crm:
  base_url: https://api.littlegreenlight.com/api/v1
  environment: production
"""
