"""The blocking client the CLI uses: one Unix-socket connection, one request at a time.

Error replies come back as the same typed :class:`EdgememError` the daemon raised (by code), so the
CLI prints one line and exits with the documented code whether it ran ``--local`` or not. No daemon
at the socket is :class:`DaemonUnavailable`, with the command that starts one.

Ctrl+C (KeyboardInterrupt) during a call sends ``cancel`` for the request and closes the connection,
so the daemon stops the work at once (either alone would do); the next call connects again.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgemem.daemon import protocol
from edgemem.errors import DaemonUnavailable

OnEvent = Callable[[str, Any], None]

MAX_REPLY_BYTES = 256 * 1024 * 1024  # a reply is ours, but a runaway one must not eat the machine


class Client:
    def __init__(self, path: Path | str, *, timeout: float | None = None, connect_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._file: Any = None
        self._ids = itertools.count(1)

    def _unavailable(self, why: str = "") -> DaemonUnavailable:
        extra = f" ({why})" if why else ""
        return DaemonUnavailable(f"no edgemem daemon at {self.path}{extra}; start one with `edgemem serve` (or use --local)")

    def connect(self) -> Client:
        if self._sock is not None:
            return self
        if len(os.fsencode(self.path)) > 107:
            raise self._unavailable("the socket path is too long for a Unix socket")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(str(self.path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise self._unavailable() from None
        except PermissionError:
            sock.close()
            raise self._unavailable("permission denied: the socket belongs to another user") from None
        except OSError as exc:
            sock.close()
            raise self._unavailable(exc.strerror or type(exc).__name__) from None
        sock.settimeout(self.timeout)
        self._sock = sock
        self._file = sock.makefile("rb")
        return self

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, params: dict | None = None, *, on_event: OnEvent | None = None) -> Any:
        """Send one request and return its result; ``on_event(name, data)`` sees streamed events."""
        self.connect()
        assert self._sock is not None
        request_id = str(next(self._ids))
        params = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            self._sock.sendall(protocol.request(request_id, method, params))
            while True:
                line = self._file.readline(MAX_REPLY_BYTES)
                if not line:
                    self.close()
                    raise DaemonUnavailable(f"the daemon at {self.path} closed the connection before answering (see its log)")
                msg = json.loads(line)
                if msg.get("id") not in (request_id, None):
                    continue  # a reply to an earlier, abandoned request on this connection
                if "event" in msg:
                    if on_event is not None:
                        on_event(msg["event"], msg.get("data"))
                    continue
                if "error" in msg:
                    raise protocol.remote_error(msg["error"])
                if "result" in msg:
                    return msg["result"]
        except KeyboardInterrupt:
            self.abandon(request_id)
            raise
        except TimeoutError:
            self.close()
            raise DaemonUnavailable(f"no reply from the daemon at {self.path} within {self.timeout:g}s") from None
        except (BrokenPipeError, ConnectionResetError):
            self.close()
            raise DaemonUnavailable(f"the daemon at {self.path} dropped the connection (see its log)") from None
        except json.JSONDecodeError:
            self.close()
            raise protocol.BadFrame("the daemon sent a line that is not JSON") from None


    def abandon(self, request_id: str) -> None:
        """Stop waiting for ``request_id``: ask the daemon to cancel it, then hang up (best effort)."""
        sock = self._sock
        if sock is not None:
            try:
                sock.settimeout(0.5)
                sock.sendall(protocol.request(f"cancel-{request_id}", "cancel", {"request": request_id}))
            except OSError:
                pass
        self.close()


def call(path: Path | str, method: str, params: dict | None = None, *, on_event: OnEvent | None = None,
         timeout: float | None = None) -> Any:
    """One request on a fresh connection."""
    with Client(path, timeout=timeout) as client:
        return client.call(method, params, on_event=on_event)
