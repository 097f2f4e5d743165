"""The host's own namespace: where the host's operators live, apart from every organisation.

A host with organisations (``synctool/orgs.py``) has operators of its own (``synctool users add EMAIL
--host-admin``): they see the host's overview (every organisation's backlog, failures and last runs, no donor
data) on the host page (``/host``, ``synctool.web.host_page``). They live in the host's own database,
``$SYNCTOOL_HOME/host/synctool.db`` (the folder its user's alone, 0700; the file 0600): the same schema and
migrations as any synctool database, of which only the users, sign-in links, sessions and staff actions are used.
No organisation's database holds a host operator and the host's database holds no organisation's data, so a host
operator's link or session opens nothing of an organisation's, and an organisation's opens nothing of the host's.

A host whose config (below) says ``database: postgresql://USER@HOST/DB`` keeps everything in that database instead:
the host's operators in its schema ``host``, each organisation's data in its own (``org_NAME``,
``orgs.host_database_url``); the password is libpq's (``PGPASSWORD``, ``~/.pgpass``), never the config.

The host's Runtime reads ``$SYNCTOOL_HOME/host/config.yaml`` (written on first use with every key at its default;
``receiver.public_url`` there is where the operators' sign-in links start) and nothing of the process environment:
no variable set for the single install or an organisation points the host elsewhere. It holds no secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from synctool import orgs
from synctool.runtime import Runtime
from synctool.secrets import Secrets

#: the host page's path, under the public URL
PAGE_PATH = "/host"
STARTER_CONFIG = """\
# synctool's host: the settings of the host's own page (`synctool users ... --host-admin`, /host).
# Every key is optional. receiver.public_url is where the host's operators reach `synctool serve`: their
# sign-in links start with it (`synctool users login-link EMAIL --host-admin --url URL` says it for one link).
# receiver:
#   public_url: https://sync.example.org
# On several machines sharing one PostgreSQL database (docs/deploy.md "Several machines"), every organisation's
# data and the host's operators are kept there, each in a schema of its own (the password in ~/.pgpass):
# database: postgresql://synctool@db.example.org/synctool
"""


def folder(environ: Mapping[str, str]) -> Path:
    """The host's own folder: ``$SYNCTOOL_HOME/host``."""
    return orgs.home(environ) / "host"


def database(environ: Mapping[str, str]) -> Path:
    """The host's database (its operators, their sign-in links and sessions)."""
    return folder(environ) / "synctool.db"


def config_file(environ: Mapping[str, str]) -> Path:
    return folder(environ) / "config.yaml"


def runtime(environ: Mapping[str, str]) -> Runtime:
    """The host's Runtime: its config (written with the defaults when missing, its folder made 0700) pointed at
    its database, no secrets, and no value of ``environ`` but where the host's data folder is. The platforms are
    registered first (``platforms.registered()``: their config sections), as for any config."""
    from synctool import store
    from synctool.config import load_config

    path = config_file(environ)
    if not path.is_file():
        store.private_folder(path.parent)
        if store.private_file(path):
            path.write_text(STARTER_CONFIG, encoding="utf-8")
    url = orgs.host_database_url(environ)
    env = {"SYNCTOOL_DB": url or str(database(environ))}
    if "SYNCTOOL_HOME" in environ:
        env["SYNCTOOL_HOME"] = environ["SYNCTOOL_HOME"]
    config = load_config(path, env)
    return Runtime(config=config, secrets=Secrets({}, use_keyring=False), environ=env, schema=orgs.HOST_SCHEMA if url else None)
