"""One of the processes in the pacing test: N reads of the CRM through synctool's client, on the configured database
(``SYNCTOOL_DB``: SQLite's file or a PostgreSQL URL), as a command opens it."""

import sys

from synctool import platforms
from synctool.crm import environment as crm
from synctool.runtime import Runtime

platforms.registered()  # as every command does, before the config is read
config = Runtime.from_environ()
conn = config.open_database()
client = crm.open_client(conn, config)
for _ in range(int(sys.argv[1])):
    client.request("GET", "/funds", params={"limit": 1})
