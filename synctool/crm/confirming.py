"""A CRM write whose answer was lost (``UncertainWrite``): it may have landed, so before it is sent again it is
looked for, and only once ``crm.confirm_after_s`` has passed since it was sent (a slow CRM may store it after the
client gave up). Until then its job waits (``Wait``, not counted against its attempts). The gift ledger says it
in words of its own (``crm/gifts.py``: it searches by the gift's external id)."""

from __future__ import annotations

from synctool.errors import Wait
from synctool.timeutil import age_s


def answer_lost(what: str, exc: Exception, confirm_after_s: float) -> Wait:
    """The ``Wait`` to raise when ``what``'s create was sent and its answer lost (``exc``)."""
    return Wait(
        f"{what} sent, waiting to confirm (the CRM's answer was lost: {exc}); looking for it in {confirm_after_s:.0f} s",
        retry_after=confirm_after_s,
    )


def wait_until_due(what: str, sent_at: str | None, confirm_after_s: float) -> None:
    """Raise ``Wait`` while ``what``, sent at ``sent_at``, is not yet due to be looked for."""
    due = confirm_after_s - max(age_s(sent_at) or 0.0, 0.0)
    if due > 0:
        raise Wait(f"{what} sent, waiting to confirm (looking for it in {due:.0f} s)", retry_after=due)
