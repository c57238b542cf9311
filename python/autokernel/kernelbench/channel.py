"""The judge's side of a solution process: spawning it (a fresh interpreter in a session of its own,
never a fork of the judge), sending it commands, and reading its acknowledgements with a deadline.

The channel is a pipe the solver writes to and nothing else does. Only three lines are expected,
each answering the command just sent and carrying that command's nonce: `ready`, `done` and
`fail <kind>`. Anything else — bytes before a command was sent, a wrong nonce, an unknown word, a
long line, bytes left when the process has gone — is a forged message, reported as such. A
process that dies is described by how it ended; one that does not answer in time is killed with
its whole process group.
"""
import os
import pickle
import secrets
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

MAX_LINE = 64


@dataclass
class Answer:
    kind: str  # "ok", "fail", "timeout", "died", "forged"
    detail: str = ""  # fail: the solver's failure kind; died: how; forged: what came


class SolverProcess:
    def __init__(self, plan, log_path, env, cwd):
        read_end, write_end = os.pipe()
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autokernel.kernelbench.solver", str(write_end), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(write_end,),
            start_new_session=True, env=env, cwd=cwd, close_fds=True)
        os.close(write_end)
        self._channel = read_end
        self._pending = b""
        self.nonce = plan["nonce"]
        payload = pickle.dumps(plan)
        self._write(str(len(payload)).encode() + b"\n" + payload)

    def _write(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def command(self, word, *arguments, timeout):
        """Sends one command and waits for its answer."""
        stray = self._read_available(0)
        if stray:
            return Answer("forged", stray)
        nonce = secrets.token_hex(8)
        if not self._write((" ".join([word, nonce, *map(str, arguments)]) + "\n").encode()):
            return self._died()
        return self.expect(nonce, timeout)

    def expect(self, nonce, timeout):
        """The answer carrying `nonce` (the ready of the start carries the plan's)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            if len(self._pending) > MAX_LINE:
                return Answer("forged", self._pending[:MAX_LINE].decode(errors="replace"))
            left = deadline - time.monotonic()
            if left <= 0:
                return Answer("timeout")
            ready, _, _ = select.select([self._channel], [], [], left)
            if not ready:
                return Answer("timeout")
            chunk = os.read(self._channel, 4096)
            if not chunk:
                return self._died()
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        words = line.decode(errors="replace").split()
        if len(words) == 2 and words[0] in ("ready", "done") and words[1] == nonce:
            return Answer("ok")
        if len(words) == 3 and words[0] == "fail" and words[1] == nonce:
            return Answer("fail", words[2])
        return Answer("forged", line[:MAX_LINE].decode(errors="replace"))

    def _read_available(self, timeout):
        data = self._pending
        self._pending = b""
        while select.select([self._channel], [], [], timeout)[0]:
            chunk = os.read(self._channel, 4096)
            if not chunk:
                break
            data += chunk
            timeout = 0
        return data.decode(errors="replace")[:MAX_LINE]

    def _died(self):
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return Answer("died", "closed its channel and did not exit")
        if code < 0:
            return Answer("died", f"killed by {signal.Signals(-code).name}")
        return Answer("died", f"exited with code {code}")

    def finish(self, timeout=10):
        """Asks the process to quit, kills what is left, and returns what it wrote on the channel
        after its last answer (empty for an honest one)."""
        self._write(b"quit\n")
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        stray = self._read_available(0)
        self.close()
        return stray

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: everything it started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self):
        for closer in (self.proc.stdin.close, lambda: os.close(self._channel), self._log.close):
            try:
                closer()
            except OSError:
                pass

    def reason(self, fallback):
        """The solver's own one-line reason for a failure (its last `autokernel-solver:` line)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, os.path.getsize(self.log_path) - 65536))
                lines = log.read().decode(errors="replace").splitlines()
        except OSError:
            return fallback
        for line in reversed(lines):
            if line.startswith("autokernel-solver: "):
                return line[len("autokernel-solver: "):].split(": ", 1)[-1][:400]
        tail = [line.strip() for line in lines if line.strip()]
        return f"{fallback}: {tail[-1][:300]}" if tail else fallback
