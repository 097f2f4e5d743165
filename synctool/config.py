"""Deployment configuration: ``config.yaml`` plus environment overrides.

Where things live is decided here and only here: the config file is ``--config``, else
``$SYNCTOOL_CONFIG``, else ``~/.config/synctool/config.yaml``; the database is ``$SYNCTOOL_DB``, else the
file's ``database`` key, else ``~/.local/share/synctool/synctool.db``. A default config path that does not
exist means "all defaults"; a path the user named that does not exist is an error.

Every platform base URL can be overridden by environment (``CRM_API_BASE_URL``, ...), which is how
the demo and the tests point synctool at the local fakes. Secrets are not here: see ``secrets.py``. The
sections' models are ``config_sections.py``'s, each importable from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, Field, ValidationError

from synctool.config_sections import DEFAULT_DB as DEFAULT_DB
from synctool.config_sections import Config as Config
from synctool.config_sections import CrmConfig as CrmConfig
from synctool.config_sections import DonorsConfig as DonorsConfig
from synctool.config_sections import OrganisationConfig as OrganisationConfig
from synctool.config_sections import PlatformApiConfig as PlatformApiConfig
from synctool.config_sections import ProfileDefaults as ProfileDefaults
from synctool.config_sections import QueueConfig as QueueConfig
from synctool.config_sections import ReceiverConfig as ReceiverConfig
from synctool.config_sections import RefundsConfig as RefundsConfig
from synctool.config_sections import RetentionConfig as RetentionConfig
from synctool.config_sections import Section as Section
from synctool.config_sections import SmtpConfig as SmtpConfig
from synctool.config_sections import SoftCreditsConfig as SoftCreditsConfig
from synctool.config_sections import WebhooksConfig as WebhooksConfig
from synctool.config_sections import is_loopback as is_loopback
from synctool.config_sections import shown_database_url as shown_database_url
from synctool.errors import ConfigError
from synctool.validation import field_of, problem

DEFAULT_CONFIG = Path("~/.config/synctool/config.yaml").expanduser()


#: environment variable -> (section, key); the value joins the file's before validation
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "CRM_API_BASE_URL": ("crm", "base_url"),
    "CRM_ENVIRONMENT": ("crm", "environment"),
    "CRM_RATE_LIMIT_REQUESTS": ("crm", "rate_limit_requests"),
    "CRM_RATE_LIMIT_WINDOW_S": ("crm", "rate_limit_window_s"),
    "CRM_SHARE_REQUESTS": ("crm", "share_requests"),
    "CRM_MIN_INTERVAL_MS": ("crm", "min_interval_ms"),
    "CRM_SEND_MARGIN_MS": ("crm", "send_margin_ms"),
    "CRM_RETRY_BASE_MS": ("crm", "retry_base_ms"),
    "CRM_TIMEOUT_S": ("crm", "timeout_s"),
    "CRM_CONFIRM_AFTER_S": ("crm", "confirm_after_s"),
    "QUEUE_RETRY_DELAY_MS": ("queue", "retry_delay_ms"),
    "PLATFORM_API_RETRY_BASE_MS": ("platform_api", "retry_base_ms"),
    "PLATFORM_API_TIMEOUT_S": ("platform_api", "timeout_s"),
    "RECEIVER_BUSY_TIMEOUT_S": ("receiver", "busy_timeout_s"),
    "QUEUE_LEASE_SECONDS": ("queue", "lease_seconds"),
    "REFUNDS_POLICY": ("refunds", "policy"),
    "SOFT_CREDITS_ENABLED": ("soft_credits", "enabled"),
    "SOFT_CREDITS_CREATE_FUNDRAISERS": ("soft_credits", "create_fundraisers"),
    "DONORS_UPDATES": ("donors", "updates"),
    "DONORS_MATCHING": ("donors", "matching"),
    "REFUNDS_WAIT_FOR_GIFT_S": ("refunds", "wait_for_gift_s"),
    "CRM_GROUP_ID_SCHOLARSHIP_FULL": ("crm", "scholarship_group_full"),
    "CRM_GROUP_ID_SCHOLARSHIP_PARTIAL": ("crm", "scholarship_group_partial"),
    "SMTP_SECURITY": ("smtp", "security"),
}

#: the overrides a host tunes for every organisation alike (pacing, timeouts, retries, leases): an organisation's
#: config takes these from the environment and no others (``orgs.config_environ``), so where its requests and its
#: secrets go, and what it does with donors and refunds, are its own config's alone
TUNING = frozenset(
    {
        "CRM_RATE_LIMIT_REQUESTS", "CRM_RATE_LIMIT_WINDOW_S", "CRM_SHARE_REQUESTS", "CRM_MIN_INTERVAL_MS",
        "CRM_SEND_MARGIN_MS", "CRM_RETRY_BASE_MS", "CRM_TIMEOUT_S", "CRM_CONFIRM_AFTER_S", "QUEUE_RETRY_DELAY_MS",
        "PLATFORM_API_RETRY_BASE_MS", "PLATFORM_API_TIMEOUT_S", "RECEIVER_BUSY_TIMEOUT_S", "QUEUE_LEASE_SECONDS",
        "REFUNDS_WAIT_FOR_GIFT_S",
    }
)  # fmt: skip


#: a host's tuning of its cron across organisations (``ops/host.py``): environment variable -> its HostTuning field
HOST_TUNING: dict[str, str] = {"SYNCTOOL_HOST_WORKERS": "workers", "SYNCTOOL_HOST_SLICE_S": "slice_s"}


class HostTuning(BaseModel):
    """How a host's `drain` shares its time between organisations: ``workers`` organisations drained at once (each
    with its own ``queue.concurrency``), each visit at most ``slice_s`` seconds before the next organisation's turn."""

    workers: int = Field(16, ge=1, le=64)
    slice_s: float = Field(10.0, gt=0, le=60)


def host_tuning(environ: Mapping[str, str] | None = None) -> HostTuning:
    """The host's tuning from ``environ`` (``HOST_TUNING``'s variables); ConfigError naming the variable that does
    not fit."""
    environ = os.environ if environ is None else environ
    given = {key: environ[env] for env, key in HOST_TUNING.items() if environ.get(env)}
    try:
        return HostTuning.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        env = next(env for env, key in HOST_TUNING.items() if key == field_of(error))
        raise ConfigError(env, "environment", problem(error)) from None


def override_names() -> set[str]:
    """Every environment variable ``load_config`` reads as an override: the core's and the registered platforms'."""
    return {*ENV_OVERRIDES, *(env for _, env_keys in SECTIONS.values() for env in env_keys)}


#: the config sections of the registered platforms, built-ins and outside packages alike: role -> (pydantic model,
#: env var -> key). The registry adds them as it loads (``platforms.registered``), which every command does before
#: it reads the config (``cli/main.py``); a section no registered platform claims is an unknown key
SECTIONS: dict[str, tuple[type[BaseModel], Mapping[str, str]]] = {}


def add_section(role: str, model: type[BaseModel], env: Mapping[str, str]) -> None:
    """Accept ``<role>:`` in config.yaml, validated by ``model``, with ``env``'s variables overriding its keys."""
    if role in Config.model_fields:  # a platform author's mistake, found when the registry loads
        raise ValueError(f"a platform's config section cannot be the core's {role!r}")
    SECTIONS[role] = (model, dict(env))


def config_path(explicit: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The config path and whether the user named it (so that its absence is an error)."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = (os.environ if environ is None else environ).get("SYNCTOOL_CONFIG")
    if env:
        return Path(env).expanduser(), True
    return DEFAULT_CONFIG, False


def _read(path: Path, named: bool) -> tuple[dict[str, Any], str]:
    if not path.exists():
        if named:
            raise ConfigError("config", str(path), "file not found (run `synctool init` to create one)")
        return {}, "defaults"
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
    return loaded, source


def _renamed_smtp_starttls(data: dict[str, Any], source: str, renamed: list[str]) -> None:
    """Before 0.3 ``smtp.starttls: true|false`` said whether to use STARTTLS; ``smtp.security`` replaces it
    (true: ``starttls``, false: ``none``). The old key is still read; what to rename goes into ``renamed``."""
    smtp = data.get("smtp")
    if not isinstance(smtp, dict) or "starttls" not in smtp:
        return
    old = smtp.pop("starttls")
    if not isinstance(old, bool):
        raise ConfigError("smtp.starttls", source, "must be true or false (it is now smtp.security: starttls, tls or none)")
    new = "starttls" if old else "none"
    if "security" in smtp:
        renamed.append(f"{source}: smtp.starttls is now smtp.security, which is set here too and wins; remove smtp.starttls")
    else:
        smtp["security"] = new
        renamed.append(f"{source}: smtp.starttls is now smtp.security: {new} (the old key still works; rename it)")


def load_config(explicit: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate the configuration with ``environ``'s overrides (``os.environ`` when not given);
    raise ConfigError naming the key and where it was read. ``Runtime.from_environ`` is the usual caller."""
    environ = os.environ if environ is None else environ
    if not SECTIONS:  # a caller's bug, not a user's: the platforms' sections would be refused as unknown keys
        raise RuntimeError("load the platform registry (synctool.platforms.registered()) before reading the config")
    data, source = _read(*config_path(explicit, environ))
    renamed: list[str] = []
    moved = (data.get("webhooks") or {}).pop("pos_notification_url", None) if isinstance(data.get("webhooks"), dict) else None
    if moved is not None:  # before 0.3 the POS platform's URL was a core key; it is now its section's
        data.setdefault("pos", {}).setdefault("notification_url", moved)
        renamed.append(f"{source}: webhooks.pos_notification_url is now pos.notification_url (the old key still works; move it)")
    _renamed_smtp_starttls(data, source, renamed)
    # each registered platform brings its own section and overrides (add_section)
    added = dict(SECTIONS)
    overrides = {**ENV_OVERRIDES, **{env: (role, key) for role, (_, env_keys) in added.items() for env, key in env_keys.items()}}
    from_env: dict[tuple[str, str], str] = {}
    for env, (section, key) in overrides.items():
        raw = environ.get(env)
        if raw is None or raw == "":
            continue
        part = data.get(section)
        if part is None or not isinstance(part, dict):
            part = data[section] = {} if part is None else part
        if isinstance(part, dict):
            part[key] = raw
            from_env[(section, key)] = env
    sections: dict[str, BaseModel] = {}
    for role, (model, _) in added.items():
        try:
            sections[role] = model.model_validate(data.pop(role, None) or {})
        except ValidationError as exc:
            found = exc.errors()[0]
            where = (role, str(found["loc"][0])) if found["loc"] else (role, "")
            if where in from_env:
                raise ConfigError(from_env[where], "environment", problem(found)) from None
            raise ConfigError(f"{role}.{field_of(found)}", source, problem(found)) from None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(p) for p in error["loc"])
        if len(loc) >= 2 and (loc[0], loc[1]) in from_env:
            raise ConfigError(from_env[(loc[0], loc[1])], "environment", problem(error)) from None
        raise ConfigError(field_of(error) or "(top level)", source, problem(error)) from None
    config._sections = sections
    config._source = source
    config._db_override = environ.get("SYNCTOOL_DB") or None
    _check_database(config, environ, source)
    config._renamed = renamed
    return config


#: a ``database`` that is a URL of these opens PostgreSQL (``store/postgres.py``); any other value is SQLite's file
DATABASE_SCHEMES = ("postgresql", "postgres")


def is_database_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL database (else it is a SQLite file's path)."""
    return isinstance(target, str) and target.split("://", 1)[0].lower() in DATABASE_SCHEMES and "://" in target


def database_url_problem(url: str) -> str | None:
    """What is wrong with a database URL as written (None when nothing is): its scheme, host, database name, and
    never a password (the keyring's DATABASE_PASSWORD, PGPASSWORD or ~/.pgpass hold it)."""
    scheme = url.partition("://")[0]
    if scheme.lower() not in DATABASE_SCHEMES:
        return f"{scheme or 'no'} scheme: a database URL is postgresql://USER@HOST[:PORT]/DB (a path keeps SQLite)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises)
    except ValueError as exc:
        return f"not a database URL ({exc}): postgresql://USER@HOST[:PORT]/DB"
    if parts.password is not None:
        return (
            "a password does not belong in the URL (the config is not a secret store): keep it in the keyring"
            " (DATABASE_PASSWORD), PGPASSWORD or ~/.pgpass"
        )
    if not parts.hostname:
        return "no host: postgresql://USER@HOST[:PORT]/DB"
    if not parts.path.strip("/") or "/" in parts.path.strip("/"):
        return "no database name: postgresql://USER@HOST[:PORT]/DB"
    if parts.query or parts.fragment:
        return "options after ? or # are not read: postgresql://USER@HOST[:PORT]/DB"
    return None


def _check_database(config: Config, environ: Mapping[str, str], source: str) -> None:
    """A PostgreSQL URL (``database:`` or ``$SYNCTOOL_DB``) as written: its scheme, host and database name, never a
    password."""
    key, where, value = (
        ("SYNCTOOL_DB", "environment", config._db_override) if config._db_override else ("database", source, config.database)
    )
    if not value or "://" not in value:
        return  # a path: SQLite
    problem = database_url_problem(value)
    if problem:
        raise ConfigError(key, where, problem)


STARTER_CONFIG = """\
# synctool configuration. Every key is optional; see config.example.yaml for all of them.
# Secrets (API keys, webhook secrets) do not belong here: use `synctool crm config --api-key`
# (keyring) or environment variables such as CRM_API_KEY and POS_WEBHOOK_SIGNATURE_KEY.
database: {database}
receiver:
  host: 127.0.0.1
  port: 8787
crm:
  base_url: https://api.littlegreenlight.com/api/v1
  environment: production
"""
