"""What a page's view and a form's action return."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple


@dataclass
class ViewResult:
    """What a view hands its template (the view's own name), and the page's status."""

    context: Mapping[str, object]
    status: int = 200


class ActionResult(NamedTuple):
    """What an action did: the message for the next page, and what it acted on (the staff action's target)."""

    message: str
    target: str | None
