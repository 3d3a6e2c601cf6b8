"""The log survives llama-cpp-python's stderr redirection.

While it loads a model, llama-cpp-python points file descriptor 2 at /dev/null for the whole process
(``suppress_stdout_stderr``). The daemon's other threads go on logging meanwhile; a daemon stopped
during a model load once exited without its "stopped" line. The CLI logs to a duplicate of stderr."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, os, sys
from edgemem.cli import _log_stream
stream = _log_stream() if sys.argv[1] == "dup" else sys.stderr
logging.basicConfig(stream=stream, level=logging.INFO, format="%(message)s")
saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 2)  # what llama-cpp-python does around a model load
logging.getLogger("edgemem.test").info("logged during the load")
os.dup2(saved, 2)
logging.getLogger("edgemem.test").info("logged after it")
"""


def run(mode: str) -> str:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60, check=True).stderr


def test_log_lines_written_while_stderr_points_at_dev_null_still_arrive() -> None:
    assert run("dup").splitlines() == ["logged during the load", "logged after it"]


def test_the_plain_stderr_stream_would_lose_them() -> None:  # what the test above guards against
    assert run("plain").splitlines() == ["logged after it"]
