"""Deployment configuration: ``config.yaml`` plus environment overrides.

Where things live is decided here and only here: the config file is ``--config``, else
``$SYNCTOOL_CONFIG``, else ``~/.config/synctool/config.yaml``; the database is ``$SYNCTOOL_DB``, else the
file's ``database`` key, else ``~/.local/share/synctool/synctool.db``. A default config path that does not
exist means "all defaults"; a path the user named that does not exist is an error.

Every platform base URL can be overridden by environment (``CRM_API_BASE_URL``, ...), which is how
the demo and the tests point synctool at the local fakes. Secrets are not here: see ``secrets.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from synctool.errors import ConfigError

DEFAULT_CONFIG = Path("~/.config/synctool/config.yaml").expanduser()
DEFAULT_DB = Path("~/.local/share/synctool/synctool.db").expanduser()


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReceiverConfig(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    admin_api: bool = False


class WebhooksConfig(_Section):
    #: the exact URL registered with Square; its signature covers it
    pos_notification_url: str | None = None
    #: Stripe and portal signatures older than this are refused
    tolerance_s: int = Field(300, ge=1)


class ProfileDefaults(_Section):
    """Fields sent on every constituent synctool creates (spec: default profile fields)."""

    is_org: bool = False
    constituent_contact_type_name: str = "Primary"
    addressee_format: str = "{first_name} {last_name}"
    salutation_format: str = "{first_name}"


class CrmConfig(_Section):
    base_url: str = "https://api.littlegreenlight.com/api/v1"
    sandbox_base_url: str | None = None
    environment: str = Field("production", pattern="^(production|sandbox)$")
    rate_limit_requests: int = Field(300, ge=1)
    rate_limit_window_s: float = Field(300.0, gt=0)
    min_interval_ms: float = Field(1100.0, ge=0)
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    retry_base_ms: float = Field(1000.0, ge=0)
    profile_defaults: ProfileDefaults = ProfileDefaults()


class DonationsConfig(_Section):
    base_url: str = "https://api.givebutter.com/v1"
    poll_overlap_minutes: int = Field(60, ge=0)
    poll_first_lookback_hours: int = Field(24, ge=1)
    default_fund_id: int | None = None
    default_campaign_id: int | None = None


class PosConfig(_Section):
    base_url: str = "https://connect.squareup.com"
    square_version: str = "2026-08-19"


class MailingConfig(_Section):
    #: when unset, derived from the API key's data-centre suffix (``...-us14``)
    base_url: str | None = None


class QueueConfig(_Section):
    concurrency: int = Field(3, ge=1, le=3)
    max_attempts: int = Field(3, ge=1)
    retry_delay_ms: float = Field(5000.0, ge=0)
    lease_seconds: float = Field(300.0, ge=1)


class SmtpConfig(_Section):
    host: str | None = None
    port: int = 587
    username: str | None = None
    starttls: bool = True
    sender: str = "synctool@localhost"


class Config(_Section):
    database: str | None = None
    log_file: str | None = None
    receiver: ReceiverConfig = ReceiverConfig()
    webhooks: WebhooksConfig = WebhooksConfig()
    crm: CrmConfig = CrmConfig()
    donations: DonationsConfig = DonationsConfig()
    pos: PosConfig = PosConfig()
    mailing: MailingConfig = MailingConfig()
    queue: QueueConfig = QueueConfig()
    smtp: SmtpConfig = SmtpConfig()

    #: where the file was read from, for messages ("defaults" when there was none)
    source: str = Field("defaults", exclude=True)

    @property
    def db_path(self) -> Path:
        env = os.environ.get("SYNCTOOL_DB")
        if env:
            return Path(env).expanduser()
        if self.database:
            return Path(self.database).expanduser()
        return DEFAULT_DB


# environment variable -> (section, key, parser)
_ENV_OVERRIDES: dict[str, tuple[str, str, type]] = {
    "CRM_API_BASE_URL": ("crm", "base_url", str),
    "CRM_ENVIRONMENT": ("crm", "environment", str),
    "CRM_RATE_LIMIT_REQUESTS": ("crm", "rate_limit_requests", int),
    "CRM_RATE_LIMIT_WINDOW_S": ("crm", "rate_limit_window_s", float),
    "CRM_MIN_INTERVAL_MS": ("crm", "min_interval_ms", float),
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

    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        problem = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise ConfigError(key, source, problem) from None
    config.source = source

    for env, (section, key, parse) in _ENV_OVERRIDES.items():
        raw = os.environ.get(env)
        if raw is None or raw == "":
            continue
        try:
            value = parse(raw)
        except ValueError:
            raise ConfigError(env, "environment", f"expected {parse.__name__}, got {raw!r}") from None
        part = getattr(config, section)
        try:
            setattr(part, key, value)
            type(part).model_validate(part.model_dump() | {key: value})
        except ValidationError as exc:
            raise ConfigError(env, "environment", exc.errors()[0]["msg"]) from None
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
