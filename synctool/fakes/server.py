"""Running a fake (or the receiver) on loopback in a background thread, for the demo and the tests that
need a real socket (other processes, SIGKILL, the receiver's durability)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


class BackgroundServer:
    """``with BackgroundServer(app) as server: server.url``; stops when the block ends.

    The socket is bound here, before the server starts, so the port is known at once and no other
    process can take it in between (asking the OS for a free port and binding it later races)."""

    def __init__(self, app=None, port: int = 0):
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._app = app

    def start(self, app=None) -> BackgroundServer:
        """Serve ``app`` (or the one given at construction: the port can be known before the app is)."""
        config = uvicorn.Config(app or self._app, log_level="error", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True, name=f"server-{self.port}"
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if hasattr(self, "_server"):
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
