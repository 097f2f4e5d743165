"""Moves the whole clock of every Python process the test suite starts (pytest, its xdist workers, the synctool
processes a test spawns), the way a user's machine would be set to another day: `.ci/run` puts this folder on
PYTHONPATH with SYNCTOOL_TEST_CLOCK (an ISO 8601 moment, read in TZ when it has no offset) and TZ.

Every process moves by the same offset from the real clock (the first one computes it and hands it down in
SYNCTOOL_TEST_CLOCK_OFFSET), so a drain and the test that started it agree on the time. The monotonic clock is
not moved: timeouts and pacing keep real seconds. time-machine rather than libfaketime: libfaketime 0.9.10
(Debian 12) hangs a timed threading.Event.wait, or fails time.sleep with EINVAL, depending on whether it fakes
the monotonic clock, and synctool's drain uses both.
"""

from __future__ import annotations

import os
import time
from datetime import datetime

moved = os.environ.get("SYNCTOOL_TEST_CLOCK")
if moved:
    import time_machine

    offset = os.environ.get("SYNCTOOL_TEST_CLOCK_OFFSET")
    if offset is None:
        offset = str(datetime.fromisoformat(moved).timestamp() - time.time())
        os.environ["SYNCTOOL_TEST_CLOCK_OFFSET"] = offset
    time_machine.travel(time.time() + float(offset), tick=True).start()
