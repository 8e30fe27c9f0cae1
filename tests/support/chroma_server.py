"""A real `chroma run` server on a free loopback port, to start, kill, freeze and restart."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

CHROMA = Path(sys.executable).with_name("chroma")
START_TIMEOUT = 120.0  # a loaded 2-core CI machine takes seconds just to import chromadb


def free_port() -> int:
    """A TCP port nothing listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """``chroma run --path DIR --host 127.0.0.1 --port PORT`` from the installed chromadb."""

    def __init__(self, folder: Path, port: int | None = None, *, db: Path | None = None) -> None:
        """Args:
        folder: Where the server's log goes (and its database, unless ``db`` is given).
        port: The port to listen on; None picks a free one.
        db: An existing Chroma folder to serve instead of ``folder / "db"``.
        """
        self.folder = folder
        self.db = db or folder / "db"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ChromaServer:
        """Start the server and wait until it answers a heartbeat."""
        assert CHROMA.exists(), f"{CHROMA} is missing: install chromadb in this environment"
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder.parent / f"chroma-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [str(CHROMA), "run", "--path", str(self.db), *self._address()],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so nothing else gets the signals
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"chroma run did not answer on {self.url} in {START_TIMEOUT}s")

    def _address(self) -> list[str]:
        return ["--host", "127.0.0.1", "--port", str(self.port)]

    def _signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        """SIGKILL: the server dies at once, mid-request if one is running."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGCONT)
        self._signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def freeze(self) -> None:
        """SIGSTOP: the server keeps its port (connections are accepted) but never answers."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: undo ``freeze``."""
        self._signal(signal.SIGCONT)

    def restart(self) -> ChromaServer:
        """Kill it and start it again on the same port and data folder."""
        self.kill()
        return self.start()
