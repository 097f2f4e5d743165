"""What the platforms' fakes share (``platforms/<p>/fake.py``, on the fakes' floor): the app that serves a fake's
routes table over its state."""

from __future__ import annotations

from starlette.applications import Starlette

from synctool.fakes.routing import Guard, Row, routes


def serve(rows: list[Row], guard: Guard, state: object) -> Starlette:
    """A fake's ASGI app: one route a path of ``rows`` (``synctool.fakes.routing``), ``guard`` before every
    endpoint, and the fake's ``state`` on ``app.state.fake``, where its endpoints read it."""
    app = Starlette(routes=routes(rows, guard))
    app.state.fake = state
    return app
