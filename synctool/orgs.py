"""Organisations: many organisations on one install, each a namespace of its own.

An organisation is a name and a folder in the host's data folder (``$SYNCTOOL_HOME``, else
``~/.local/share/synctool``): ``orgs/NAME/config.yaml`` (the whole of a single install's config),
``orgs/NAME/synctool.db`` (its jobs, sync log, mirror, ledgers, users, tokens, outbox: a single install's database)
and, optionally, ``orgs/NAME/secrets.env`` (``KEY=VALUE`` lines, its user's alone). Its keyring service is
``synctool:NAME``. Isolation is structural: ``synctool --org NAME`` points the Runtime at these paths and nothing
else (``Runtime.from_environ``), so no query names an organisation and no command can reach another's files; its
secrets come from its keyring service and its file, never from the process environment.

On a host whose own config (``$SYNCTOOL_HOME/host/config.yaml``) says ``database: postgresql://...``, each
organisation's data is in that database, in a schema of its own (``org_NAME``: ``store_of``), every connection's
``search_path`` that schema alone; its folder keeps its config and ``secrets.env``.

An install without organisations is today's: its config, database and keyring service ``synctool`` are untouched
by anything here. The operations on organisations (add, list, show, remove, import) are ``ops/orgs.py``'s, and
``cli/orgs.py`` renders them.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from synctool.errors import ConfigError, InvalidInput
from synctool.secrets import Secrets

if TYPE_CHECKING:
    from synctool import store

DEFAULT_HOME = Path("~/.local/share/synctool")
NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
NAME_RULE = "1 to 40 lowercase letters, digits and '-', starting with a letter"
SECRETS_FILE = "secrets.env"


def home(environ: Mapping[str, str]) -> Path:
    """The host's data folder: ``$SYNCTOOL_HOME``, else ``~/.local/share/synctool``."""
    return Path(environ.get("SYNCTOOL_HOME") or DEFAULT_HOME).expanduser()


def check_name(name: str) -> str:
    """``name`` when it is an organisation's name; else InvalidInput saying what one is (never a path)."""
    if not NAME.fullmatch(name or ""):
        raise InvalidInput(f"{name!r} is not an organisation name", NAME_RULE)
    return name


@dataclass(frozen=True)
class Org:
    """Where organisation ``name`` lives; nothing here says it exists (``find``)."""

    name: str
    folder: Path

    @property
    def config(self) -> Path:
        return self.folder / "config.yaml"

    @property
    def database(self) -> Path:
        return self.folder / "synctool.db"

    @property
    def secrets_file(self) -> Path:
        return self.folder / SECRETS_FILE

    @property
    def service(self) -> str:
        """Its keyring service."""
        return f"synctool:{self.name}"

    def exists(self) -> bool:
        return self.config.is_file()


#: the host's own schema in a PostgreSQL host's database (its operators): no organisation's is named so
HOST_SCHEMA = "host"


def schema(name: str) -> str:
    """Organisation ``name``'s schema in a PostgreSQL host's database: ``org_NAME``, a ``-`` written ``_`` (a name has
    no ``_``, so no two organisations share one)."""
    return f"org_{check_name(name).replace('-', '_')}"


def host_config(environ: Mapping[str, str]) -> Path:
    """The host's own config: ``$SYNCTOOL_HOME/host/config.yaml``."""
    return home(environ) / "host" / "config.yaml"


def host_database_url(environ: Mapping[str, str]) -> str | None:
    """The PostgreSQL database a host keeps its organisations in: the ``database:`` key of the host's config
    (``$SYNCTOOL_HOME/host/config.yaml``) when it is a ``postgresql://`` URL; None (each organisation's own SQLite file)
    otherwise. A URL that is wrong: ConfigError (one line)."""
    from synctool.config import database_url_problem, is_database_url

    path = host_config(environ)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError("database", str(path), f"cannot read it: {exc}") from None
    if "database" not in text:  # most hosts: no YAML to parse
        return None
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ConfigError("(top level)", str(path), "not valid YAML") from None
    value = data.get("database") if isinstance(data, dict) else None
    if not isinstance(value, str) or not is_database_url(value):
        return None
    problem = database_url_problem(value)
    if problem:
        raise ConfigError("database", str(path), problem)
    return value


def store_of(org: Org) -> tuple[str, str | None]:
    """Where organisation ``org``'s data is: its SQLite file (and no schema), or the PostgreSQL database its host's
    config names and its schema there (``schema``)."""
    url = host_database_url({"SYNCTOOL_HOME": str(org.folder.parent.parent)})
    return (url, schema(org.name)) if url else (str(org.database), None)


def shown(org: Org) -> str:
    """Where organisation ``org``'s data is, as messages say it (a URL without its password)."""
    where, found = store_of(org)
    if found is None:
        return where
    from synctool.config import shown_database_url

    return f"{shown_database_url(where)} (schema {found})"


def open_store(org: Org, *, read_only: bool = False) -> store.Connection:
    """A connection to organisation ``org``'s data: its file (opened for reading alone when ``read_only``; ConfigError
    when it is missing), or its schema of the host's PostgreSQL database (neither made nor migrated when
    ``read_only``). Its password: libpq's own (``PGPASSWORD``, ``~/.pgpass``)."""
    from synctool import store

    where, found = store_of(org)
    if found is None:
        if not read_only:
            return store.connect(where)
        if not org.database.is_file():
            raise ConfigError("database", where, "missing")
        return store.open_read_only(where)
    return store.connect(where, migrate=not read_only, schema=found)


def place(name: str, environ: Mapping[str, str]) -> Org:
    """Where organisation ``name`` lives (its name checked first: no name is a path)."""
    return Org(check_name(name), home(environ) / "orgs" / name)


def find(name: str, environ: Mapping[str, str]) -> Org:
    """Organisation ``name``, which must exist; InvalidInput (exit 2) when it does not, and nothing is created."""
    org = place(name, environ)
    if not org.exists():
        raise InvalidInput(
            f"no organisation is named {name!r} in {home(environ)}",
            "`synctool orgs list` names them; `synctool orgs add NAME` creates one",
        )
    return org


def names(environ: Mapping[str, str]) -> list[str]:
    """The organisations of this host, by name."""
    folder = home(environ) / "orgs"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if NAME.fullmatch(p.name) and (p / "config.yaml").is_file())


def refuse_disagreeing(org: Org, explicit_config: str | os.PathLike | None, environ: Mapping[str, str]) -> None:
    """An organisation's config and database are its folder's (its data the host's PostgreSQL database's, when the
    host's config names one): a ``--config``, ``$SYNCTOOL_CONFIG`` or ``$SYNCTOOL_DB`` naming another file is refused
    rather than guessed at."""
    where, in_schema = store_of(org)
    url = where if in_schema else None
    for what, given, own in (
        ("--config", explicit_config, org.config),
        ("SYNCTOOL_CONFIG", None if explicit_config else environ.get("SYNCTOOL_CONFIG"), org.config),
        ("SYNCTOOL_DB", environ.get("SYNCTOOL_DB"), url or org.database),
    ):
        if given and isinstance(own, str):  # the host's database URL: the same URL, else refused
            if given != own:
                from synctool.config import shown_database_url

                raise InvalidInput(
                    f"--org {org.name} and {what} disagree: organisation {org.name}'s data is in {shown_database_url(own)}"
                    f" (schema {schema(org.name)})",
                    f"drop {what} (the host's config names its database)",
                )
        elif given and Path(given).expanduser().resolve() != Path(own).resolve():
            raise InvalidInput(
                f"--org {org.name} and {what} {given} disagree: organisation {org.name}'s is {own}",
                f"drop {what} (an organisation's files are its folder's)",
            )


def read_secrets(org: Org) -> dict[str, str]:
    """The organisation's ``secrets.env`` (``KEY=VALUE`` lines; ``#`` comments and blank lines skipped), or none
    when it has no such file. Refused (ConfigError) when its group or others may read it."""
    path = org.secrets_file
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return {}
    if mode & 0o077:
        raise ConfigError(
            SECRETS_FILE, str(path), f"its group or others may read it ({mode:04o}); make it yours alone: chmod 600 {path}"
        )
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ConfigError(f"line {number}", str(path), "not a KEY=VALUE line")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def config_environ(org: Org, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` as an organisation's commands read it: pointed at its database, without the overrides that are
    its config's to say (base URLs, the CRM environment, policies: ``config.TUNING`` are kept), so a variable set for
    the single install or another organisation never sends this one's requests, or its secrets, elsewhere."""
    from synctool.config import TUNING, override_names

    dropped = override_names() - TUNING
    return {**{k: v for k, v in environ.items() if k not in dropped}, "SYNCTOOL_DB": store_of(org)[0]}


def keyring_wanted(environ: Mapping[str, str]) -> bool:
    """Whether secrets are looked for in the keyring (``SYNCTOOL_KEYRING=off`` says no)."""
    return environ.get("SYNCTOOL_KEYRING", "").lower() not in ("off", "0", "no")


def secrets(org: Org, environ: Mapping[str, str]) -> Secrets:
    """The organisation's secrets: its keyring service, then its ``secrets.env`` (ConfigError when others may read
    it), never the process environment."""
    return Secrets(read_secrets(org), use_keyring=keyring_wanted(environ), service=org.service, file=str(org.secrets_file))


def init_environ(org: Org, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` as ``synctool init`` reads it to make the organisation's config and database: pointed at its
    database, naming no other config and no organisation (its config may not be there yet)."""
    env = {k: v for k, v in environ.items() if k not in ("SYNCTOOL_CONFIG", "SYNCTOOL_ORG")}
    env["SYNCTOOL_DB"] = store_of(org)[0]
    return env
