"""What runs on the cluster's nodes: the measuring actor (one per GPU) and the compile task."""
import base64
import ctypes
import glob
import hashlib
import json
import os
import platform
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import ray

# The actor's judge gets the kernel's timeout after it has prepared the plan's references, which
# takes minutes at GPU sizes on a loaded host (as ExperimentServer allows on one machine).
PREPARE_LIMIT_S = 1800
ANSWER_GRACE_S = 30
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # The experiment server (and, through it, its judges and their launchers) ends with the actor.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _gpu_model(gpu):
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", str(gpu)],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown GPU"


def _result(status, stage, reason):
    return {"status": status, "stage": stage, "reason": reason}


@ray.remote(max_restarts=-1, max_task_retries=0)
class Measurer:
    """One worker: an experiment server of its own on this node, one experiment at a time."""

    def __init__(self, cli, backend, token, index):
        self.cli = cli
        self.backend = backend
        # Named by the run, so that the run's end can remove it from every node (clean_node), and a
        # restarted actor finds the modules it had.
        self.directory = os.path.join(tempfile.gettempdir(), f"autokernel-ray-{token}-{index}")
        os.makedirs(self.directory, exist_ok=True)
        self.server = None

    def describe(self):
        host = socket.gethostname()
        if self.backend == "cuda":
            gpus = ray.get_gpu_ids()
            gpu = int(gpus[0]) if gpus else 0
            return {"host": host, "gpu": gpu, "model": _gpu_model(gpu)}
        return {"host": host, "gpu": -1, "model": _cpu_model()}

    def _start(self):
        self.server = subprocess.Popen([self.cli, "worker", "--serve"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, start_new_session=True,
                                       preexec_fn=_die_with_parent)

    def _stop(self):
        if self.server is not None:
            try:
                os.killpg(self.server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.server.wait()
            self.server = None

    def _module(self, module):
        data = module["data"]
        path = os.path.join(self.directory, hashlib.sha256(data).hexdigest()[:32] + module["suffix"])
        if not os.path.exists(path):
            part = path + f".{os.getpid()}.tmp"
            with open(part, "wb") as out:
                out.write(data)
            os.replace(part, path)
        return path

    def measure(self, module, request, timeout_s):
        request = dict(request, module=self._module(module))
        stage = "prepare"
        for _ in range(2):  # a server that dies under an experiment is restarted once
            if self.server is None or self.server.poll() is not None:
                self._stop()
                self._start()
            answer, stage = self._exchange(request, timeout_s)
            if answer is not None:
                return answer
            self._stop()
        return _result("LOST", stage, f"the experiment server on {socket.gethostname()} ended twice during {stage}")

    def _exchange(self, request, timeout_s):
        """One request to the server: its result, or (None, stage) when the server died."""
        self.server.stdin.write((json.dumps({"request": request, "timeout_s": timeout_s}) + "\n").encode())
        self.server.stdin.flush()
        stage = "prepare"
        deadline = time.monotonic() + max(timeout_s, PREPARE_LIMIT_S)
        pending = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._stop()
                return _result("TIMEOUT", stage, f"no answer within {timeout_s} s, killed during {stage}"), stage
            ready, _, _ = select.select([self.server.stdout], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self.server.stdout.fileno(), 65536)
            if not chunk:
                return None, stage
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text == "prepared":
                    stage = "load"
                    deadline = time.monotonic() + timeout_s + ANSWER_GRACE_S
                elif text.startswith("stage "):
                    stage = text[6:]
                elif text.startswith("result "):
                    return json.loads(text[7:]), stage

    def __del__(self):
        self._stop()


@ray.remote(num_cpus=1, max_retries=1)
def compile_task(cli, ask, token):
    """Lints and compiles one candidate on this node; the module comes back as bytes."""
    with tempfile.TemporaryDirectory(prefix=f"autokernel-build-{token}-") as directory:
        source = os.path.join(directory, os.path.basename(ask["source_name"]))
        with open(source, "w") as out:
            out.write(ask["source_text"])
        request = os.path.join(directory, "build.json")
        result = os.path.join(directory, "built.json")
        with open(request, "w") as out:
            json.dump({"source": source, "defines": ask.get("defines", []), "backend": ask["backend"],
                       "arch": ask.get("arch", ""), "timeout_s": ask.get("timeout_s", 300)}, out)
        run = subprocess.run([cli, "worker", "--build", request, "--result", result], capture_output=True,
                             text=True, timeout=ask.get("timeout_s", 300) + 60)
        if run.returncode != 0 or not os.path.exists(result):
            tail = (run.stdout + run.stderr).strip().splitlines()[-3:]
            return {"ok": False, "failure": _result("ERROR", "compile", "the compile task failed on "
                                                     f"{socket.gethostname()}: " + " | ".join(tail))}
        with open(result) as answer_file:
            answer = json.load(answer_file)
        if answer.get("ok"):
            with open(answer["module"], "rb") as module:
                answer["data"] = base64.b64encode(module.read()).decode()
            answer["suffix"] = os.path.splitext(answer["module"])[1] or ".so"
        return answer


@ray.remote(num_cpus=0)
def clean_node(token):
    """Removes what the run left in this node's temporary directory: its actors' modules and the
    build directories of compile tasks that were stopped midway."""
    for pattern in (f"autokernel-ray-{token}-*", f"autokernel-build-{token}-*"):
        for path in glob.glob(os.path.join(tempfile.gettempdir(), pattern)):
            shutil.rmtree(path, ignore_errors=True)
    return True
