"""What the drain benches share: a temporary synctool pointed at every fake (in process), with the CRM's
limits scaled, the reference lists cached and donations coded to the General fund."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

POS_URL = "https://sync.example.org/webhooks/pos"


@contextmanager
def fake_world(prefix: str, *, limit: int, window_s: float, interval_ms: float) -> Iterator[tuple[Any, Any, Any]]:
    """``(world, runtime, conn)`` for a bench run; synctool's share is the whole (scaled) limit, and the send
    margin is scaled with the interval (production: 20 ms on 1,100 ms)."""
    from synctool import store
    from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld
    from synctool.ops import crm as crm_ops
    from synctool.ops import mappings
    from synctool.runtime import Runtime

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    (tmp / "config.yaml").write_text("{}\n")
    with FakeWorld(crm_limit=limit, crm_window_s=window_s) as world:
        environ = {
            "SYNCTOOL_DB": str(tmp / "bench.db"),
            "SYNCTOOL_KEYRING": "off",
            "CRM_RATE_LIMIT_REQUESTS": str(limit),
            "CRM_SHARE_REQUESTS": str(limit),
            "CRM_RATE_LIMIT_WINDOW_S": str(window_s),
            "CRM_MIN_INTERVAL_MS": str(interval_ms),
            "CRM_SEND_MARGIN_MS": str(interval_ms * 20 / 1100),
            "POS_WEBHOOK_NOTIFICATION_URL": POS_URL,
            **WEBHOOK_SECRETS,
            **world.env(),
        }
        rt = Runtime.from_environ(tmp / "config.yaml", environ, transports=world.transports())
        conn = store.connect(rt.db_path)
        crm_ops.refresh(conn, rt)
        mappings.set_type_default(conn, "donations:default", fund_id=2398, campaign_id=822)
        yield world, rt, conn
