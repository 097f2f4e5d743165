"""One of the processes in the pacing test: N reads of the CRM through synctool's client."""

import sys

from synctool import crm, store
from synctool.config import load_config

config = load_config()
conn = store.connect(config.db_path)
client = crm.open_client(conn, config)
for _ in range(int(sys.argv[1])):
    client.request("GET", "/funds", params={"limit": 1})
