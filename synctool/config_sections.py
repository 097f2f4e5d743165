"""The config file's shape: one pydantic model a section (``receiver:``, ``crm:``, ``smtp:``, ...) and ``Config``,
the whole file. Unknown keys are refused; bounds and choices are the models'. Reading the file and the
environment's overrides into them is ``config.py``'s, which re-exports every name here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from synctool.errors import ConfigError

if TYPE_CHECKING:
    import ssl

DEFAULT_DB = Path("~/.local/share/synctool/synctool.db").expanduser()


class Section(BaseModel):
    """A config section: unknown keys are refused, so a misspelt key is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid")


class ReceiverConfig(Section):
    #: where the platforms reach the receiver (https://sync.example.org); `synctool webhooks register --url` sets it
    public_url: Optional[str] = None
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    admin_api: bool = False
    #: the staff page under /admin (`serve --admin-ui`)
    admin_ui: bool = False
    #: how long a delivery waits for another process's write lock on the database before it is refused
    #: with 503 (the platform retries it)
    busy_timeout_s: float = Field(30.0, gt=0)


class WebhooksConfig(Section):
    #: Stripe and portal signatures older than this are refused
    tolerance_s: int = Field(300, ge=1)


class PlatformApiConfig(Section):
    """How synctool calls the platforms' own APIs (Givebutter, Square, Mailchimp, Stripe, a package's): a call
    that fails in a way worth repeating (no connection, 408, 429, 5xx) is tried again after retry_base_ms,
    doubling, up to max_retries times; a platform's Retry-After wins when longer."""

    timeout_s: float = Field(20.0, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    retry_base_ms: float = Field(500.0, ge=0)


class ProfileDefaults(Section):
    """Fields sent on every constituent synctool creates (spec: default profile fields)."""

    is_org: bool = False
    constituent_contact_type_name: str = "Primary"
    addressee_format: str = "{first_name} {last_name}"
    salutation_format: str = "{first_name}"


class CrmConfig(Section):
    base_url: str = "https://api.littlegreenlight.com/api/v1"
    sandbox_base_url: Optional[str] = None
    environment: Literal["production", "sandbox"] = "production"
    #: the CRM's limit for the whole account: requests in any window
    rate_limit_requests: int = Field(300, ge=1)
    rate_limit_window_s: float = Field(300.0, gt=0)
    #: the part of that limit synctool may use; the rest is left to the account's other integrations
    share_requests: int = Field(270, ge=1)
    min_interval_ms: float = Field(1100.0, ge=0)
    #: added to min_interval_ms so the gaps stay above it as the CRM receives them (send jitter)
    send_margin_ms: float = Field(20.0, ge=0)
    #: constituents per request when the CRM mirror is loaded or refreshed
    mirror_page_size: int = Field(250, ge=1, le=1000)
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    #: after a gift POST whose answer was lost, wait this long before searching the CRM for it (a slow CRM
    #: may store it after the client gave up, and its search may lag its writes) and only then POST again
    confirm_after_s: float = Field(120.0, ge=0)
    retry_base_ms: float = Field(1000.0, ge=0)
    profile_defaults: ProfileDefaults = ProfileDefaults()
    #: CRM group ids for members on a full or partial scholarship (portal memberships)
    scholarship_group_full: Optional[str] = None
    scholarship_group_partial: Optional[str] = None


class QueueConfig(Section):
    concurrency: int = Field(3, ge=1, le=3)
    max_attempts: int = Field(3, ge=1)
    retry_delay_ms: float = Field(5000.0, ge=0)
    #: a running job's lease; a live drain renews it every third of it (heartbeat), so a drain that dies
    #: (kill -9, OOM) gives up its jobs and locks within one lease
    lease_seconds: float = Field(60.0, ge=1)
    #: how long `drain --watch` waits when nothing is due (the spec's queue poll)
    watch_interval_s: float = Field(30.0, gt=0)


class RefundsConfig(Section):
    #: what a platform's refund does to its CRM gift (``synctool settings refund-policy`` overrides it):
    #: ``adjust`` lowers its amounts and notes why, ``delete`` removes a wholly refunded gift, ``flag``
    #: leaves it for a person
    policy: Literal["adjust", "delete", "flag"] = "adjust"
    #: how long a refund whose gift synctool has never seen waits for it (its webhook may be late, or the
    #: backup poll may still find it) before it is skipped as a gift made before synctool
    wait_for_gift_s: float = Field(3600.0, ge=0)
    #: how soon a waiting refund looks again (a gift's job finishing wakes it sooner)
    recheck_s: float = Field(300.0, ge=0)


class SoftCreditsConfig(Section):
    #: give a peer-to-peer fundraiser a Soft Credit gift for each gift their page took
    #: (``synctool settings soft-credits on|off`` overrides it)
    enabled: bool = True
    #: create a fundraiser the CRM does not know; off: the donor's gift notes the fundraiser instead
    create_fundraisers: bool = False


class DonorsConfig(Section):
    #: what synctool does with a contact point (e-mail, phone, address) a matched donor's platform data carries
    #: and the CRM lacks: ``review`` records a proposed change (``synctool donors changes``), ``add`` adds it
    #: as a non-preferred one at once, ``off`` drops it (``synctool settings donor-updates`` overrides it)
    updates: Literal["review", "add", "off"] = "review"
    #: a gift whose e-mail is in no constituent, but whose donor matches one by name and by street address or
    #: phone: ``review`` holds it for a person (``synctool donors matches``), ``auto`` gives it to that
    #: constituent (two candidates are held), ``email`` creates a new constituent (the e-mail match alone)
    #: (``synctool settings donor-matching`` overrides it)
    matching: Literal["review", "auto", "email"] = "review"


class RetentionConfig(Section):
    """How long ``synctool prune`` keeps what it may drop (cron runs it nightly)."""

    #: a delivery's raw body (every donor's name, address and phone as the platform sent them) is emptied this many
    #: days after it arrived; its row, its job (the sync log line) and its ids and amounts stay. A body a job still
    #: needs (queued, running, failed and unresolved, held for review, previewed) is kept whatever its age. 400:
    #: a whole year-end cycle can be replayed
    raw_bodies_days: int = Field(400, ge=1)


class SmtpConfig(Section):
    """Where alert and sign-in e-mails go. Mail leaves only over TLS whose certificate and host name are
    verified; ``none`` (no TLS) is accepted only for a relay on this machine."""

    host: Optional[str] = None
    port: int = Field(587, ge=1, le=65535)
    username: Optional[str] = None
    #: ``starttls``: a plain connection (usually port 587) upgraded before anything is sent, refused when the
    #: server does not offer it; ``tls``: TLS from the first byte (usually port 465); ``none``: no TLS, only to
    #: a loopback relay (127.0.0.1, ::1, localhost). Before 0.3: ``starttls: true|false`` (load_config maps it)
    security: Literal["starttls", "tls", "none"] = "starttls"
    #: a PEM file of CA certificates to trust instead of the system's (an internal relay's own CA)
    ca_file: Optional[str] = None
    sender: str = "synctool@localhost"

    def refusal(self) -> Optional[str]:
        """Why mail must not be sent as configured (said before any connection), else None."""
        if self.security == "none" and not is_loopback(self.host or ""):
            return (
                f"is none, so mail to {self.host} would go unencrypted; none is only for a relay on this machine "
                "(127.0.0.1, ::1, localhost): use starttls (port 587) or tls (port 465)"
            )
        return None

    def described(self) -> str:
        """How mail leaves, in one line (doctor, `alerts test`)."""
        if not self.host:
            return "not configured (smtp.host is not set)"
        where = f"{self.host}:{self.port}"
        if self.refusal():
            return f"refused: smtp.security is none and {self.host} is not a loopback address"
        if self.security == "none":
            return f"unencrypted to a loopback relay {where}"
        how = "STARTTLS" if self.security == "starttls" else "implicit TLS"
        trusted = f"the CAs in {self.ca_file}" if self.ca_file else "the system's CAs"
        return f"{how} to {where}, certificate and host name verified against {trusted}"

    def tls_context(self, source: str) -> ssl.SSLContext:
        """A client context that verifies the server's certificate and host name, against ``ca_file`` when set
        (instead of the system's CAs); ConfigError when that file cannot be read as PEM certificates."""
        import ssl  # only where mail is sent: 6 ms of every command's start otherwise

        cafile = str(Path(self.ca_file).expanduser()) if self.ca_file else None
        try:
            return ssl.create_default_context(cafile=cafile)
        except OSError as exc:  # a missing file, or one with no certificate in it (ssl.SSLError)
            reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
            raise ConfigError("smtp.ca_file", source, f"{self.ca_file} cannot be read as PEM certificates ({reason})") from None


class OrganisationConfig(Section):
    """The organisation itself."""

    #: the CRM's one currency (ISO 4217: USD, CAD, EUR): a gift, refund or payout line in another currency is held
    #: for a person (status ``review``), never written as this one; `synctool init --currency CAD` writes it
    currency: str = "USD"
    #: hosts beyond Slack's and Teams' that the chat webhook (`synctool settings plans-chat-webhook`) may name, e.g.
    #: a self-hosted Mattermost: set in this file only, so a page or an API token cannot send donors' lines elsewhere
    chat_webhook_hosts: list[str] = []

    @field_validator("currency", mode="before")
    @classmethod
    def iso_4217(cls, value: object) -> str:
        text = str(value or "").strip().upper()
        if len(text) != 3 or not text.isascii() or not text.isalpha():
            raise ValueError(f"{value!r} is not a currency code (three letters, ISO 4217: USD, CAD, EUR)")
        return text


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost``: the only hosts mail may reach without TLS (a relay on this machine)."""
    import ipaddress  # only where a mail host is checked

    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Config(Section):
    database: Optional[str] = None
    log_file: Optional[str] = None
    #: the organisation's IANA time zone (``America/New_York``): the day a gift is dated when the
    #: platform does not say where it was given; UTC when unset
    timezone: Optional[str] = None
    #: the platforms this organisation uses, by the names `synctool platforms` prints (``[givebutter,
    #: mailchimp]``); absent: every registered one. One left out is absent everywhere: its webhook route
    #: answers 404, and doctor, poll, heal, reconcile, backfill and the admin API leave it out
    platforms: Optional[list[str]] = None
    receiver: ReceiverConfig = ReceiverConfig()
    webhooks: WebhooksConfig = WebhooksConfig()
    platform_api: PlatformApiConfig = PlatformApiConfig()
    crm: CrmConfig = CrmConfig()
    queue: QueueConfig = QueueConfig()
    refunds: RefundsConfig = RefundsConfig()
    soft_credits: SoftCreditsConfig = SoftCreditsConfig()
    donors: DonorsConfig = DonorsConfig()
    retention: RetentionConfig = RetentionConfig()
    smtp: SmtpConfig = SmtpConfig()
    organisation: OrganisationConfig = OrganisationConfig()

    _source: str = PrivateAttr("defaults")
    _db_override: Optional[str] = PrivateAttr(None)
    #: the sections of platforms registered from outside synctool's own (``Platform.config``), by role
    _sections: dict[str, BaseModel] = PrivateAttr(default_factory=dict)
    #: one line per key this file still spells as an older release did (read all the same): what to rename
    _renamed: list[str] = PrivateAttr(default_factory=list)

    @property
    def renamed_keys(self) -> list[str]:
        """What to rename in the config file, one line per key an older release named (``smtp.starttls``): said by
        ``doctor``, ``init`` and the first command after the file or synctool changed, not by every cron run."""
        return list(self._renamed)

    def section(self, role: str) -> Any:
        """A registered platform's config section (``donations``, ``pos``, or an outside package's)."""
        if role not in self._sections:
            raise ConfigError(role, self._source, "no platform with this config section is registered")
        return self._sections[role]

    @field_validator("platforms")
    @classmethod
    def named_once(cls, value: Optional[list[str]]) -> Optional[list[str]]:
        if value is not None:
            names = [name.strip().lower() for name in value]
            if any(not name for name in names):
                raise ValueError("an empty platform name")
            if len(set(names)) != len(names):
                raise ValueError("a platform is named twice")
            return names
        return value

    @field_validator("timezone")
    @classmethod
    def known_zone(cls, value: Optional[str]) -> Optional[str]:
        if value:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value!r} (an IANA name such as America/New_York)") from None
        return value

    @property
    def source(self) -> str:
        """Where the file was read from, for messages ("defaults" when there was none)."""
        return self._source

    @property
    def database_url(self) -> str | None:
        """The PostgreSQL database's URL (``$SYNCTOOL_DB`` or the ``database`` key, checked by ``load_config``);
        None for SQLite's file (``db_path``)."""
        value = self._db_override or self.database
        return value if value and "://" in value else None

    @property
    def db_path(self) -> Path:
        """``$SYNCTOOL_DB`` as read by ``load_config``, else the ``database`` key, else the default."""
        if self.database_url:  # never a file named after the URL: the commands that open PostgreSQL ask database_url
            raise ConfigError("database", shown_database_url(self.database_url), "this command works on a SQLite file alone")
        if self._db_override:
            return Path(self._db_override).expanduser()
        if self.database:
            return Path(self.database).expanduser()
        return DEFAULT_DB


def shown_database_url(url: str) -> str:
    """The URL as messages show it (no password, whatever was written)."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{user}{parts.hostname}{port}{parts.path}"
