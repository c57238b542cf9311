"""python -m autokernel_ray --address auto|local|HOST:PORT --cli PATH --backend cuda|host

The side process of `autokernel optimize --ray` (see __init__.py). Prints {"op": "ready", ...}
once its actors answer, then serves the C++ driver's requests until {"op": "quit"} or the end of
its input, and shuts its Ray connection down (and, for --address local, the Ray instance it
started) before it exits.
"""
import argparse
import base64
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading

import ray

from .measurer import Measurer, clean_node, compile_task

_out_lock = threading.Lock()


def say(message):
    with _out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def connect(address, actor_cpus):
    """Joins the cluster; for "local", starts one of this machine alone, its files in a temporary
    directory that is returned (to be removed at the end), else None."""
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
    if address == "local":
        # This machine's CPUs for the compile tasks, besides the actors' own.
        directory = tempfile.mkdtemp(prefix="autokernel-ray-local-")
        ray.init(num_cpus=(os.cpu_count() or 1) + actor_cpus, _temp_dir=directory, **quiet)
        return directory
    ray.init(address=address, **quiet)
    return None


def start_actors(cli, backend, host_workers, token):
    """One actor per GPU of every live node (cuda), or host_workers actors of one CPU each."""
    actors = []
    if backend == "cuda":
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            for _ in range(int(node.get("Resources", {}).get("GPU", 0))):
                strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
                actors.append(Measurer.options(num_gpus=1, num_cpus=1, scheduling_strategy=strategy)
                              .remote(cli, backend, token, len(actors)))
    else:
        # The host backend's actors spread over the nodes: each node's CPU is a device.
        actors = [Measurer.options(num_cpus=1, scheduling_strategy="SPREAD").remote(cli, backend, token, index)
                  for index in range(host_workers)]
    if not actors:
        raise RuntimeError("the Ray cluster has no GPU" if backend == "cuda" else "no actor could be placed")
    described = ray.get([a.describe.remote() for a in actors], timeout=240)
    if ray.available_resources().get("CPU", 0) < 1:
        raise RuntimeError("the measuring actors take every CPU of the Ray cluster: none is left for "
                           "compile tasks (start the nodes with more --num-cpus)")
    workers = []
    for index, info in enumerate(described):
        device = f"gpu{info['gpu']}" if info["gpu"] >= 0 else f"cpu{index}"
        workers.append(dict(info, index=index, name=f"{info['host']}/{device}"))
    # Two actors on one host and device name apart by their index (the host backend's, or a test's).
    names = [w["name"] for w in workers]
    for w in workers:
        if names.count(w["name"]) > 1:
            w["name"] = f"{w['name']}.{w['index']}"
    return actors, workers


class Side:
    def __init__(self, cli, actors, token):
        self.cli = cli
        self.token = token
        self.actors = actors
        self.pending = {}  # ObjectRef -> (kind, id, worker)
        self.modules = {}  # (path, size, mtime) -> ObjectRef of its bytes
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.build_dir = os.path.join(os.environ.get("AUTOKERNEL_CACHE") or
                                      os.path.expanduser("~/.cache/autokernel"), "ray-modules")

    def module_ref(self, path):
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns)
        if key not in self.modules:
            with open(path, "rb") as module:
                data = module.read()
            self.modules[key] = ray.put({"data": data, "suffix": os.path.splitext(path)[1] or ".so"})
        return self.modules[key]

    def measure(self, ask):
        worker = ask["worker"]
        try:
            module = self.module_ref(ask["request"]["module"])
        except OSError as error:
            say({"op": "done", "id": ask["id"], "lost": f"the module could not be read: {error}"})
            return
        ref = self.actors[worker].measure.remote(module, ask["request"], ask["timeout_s"])
        say({"op": "stage", "worker": worker, "stage": "on the cluster"})
        with self.lock:
            self.pending[ref] = ("measure", ask["id"], worker)
        self.wake.set()

    def build(self, ask):
        ref = compile_task.remote(self.cli, ask, self.token)
        with self.lock:
            self.pending[ref] = ("build", ask["id"], -1)
        self.wake.set()

    def store(self, answer):
        """A module built elsewhere, kept on this machine under its content's name."""
        data = base64.b64decode(answer.pop("data"))
        os.makedirs(self.build_dir, exist_ok=True)
        path = os.path.join(self.build_dir, hashlib.sha256(data).hexdigest()[:32] + answer.pop("suffix", ".so"))
        if not os.path.exists(path):
            part = f"{path}.{os.getpid()}.tmp"
            with open(part, "wb") as out:
                out.write(data)
            os.replace(part, path)
        answer["module"] = path
        return answer

    def collect(self, stop):
        """Answers finished tasks as they finish, until `stop` is set (the driver has quit: what is
        still running is abandoned with the actors)."""
        while not stop.is_set():
            with self.lock:
                refs = list(self.pending)
            if not refs:
                self.wake.wait(0.2)
                self.wake.clear()
                continue
            ready, _ = ray.wait(refs, num_returns=1, timeout=0.2)
            for ref in ready:
                with self.lock:
                    kind, ident, worker = self.pending.pop(ref)
                try:
                    value = ray.get(ref)
                except Exception as error:  # an actor, a node or a task that died: never a PASS
                    why = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
                    say({"op": "done" if kind == "measure" else "built", "id": ident,
                         "lost": f"the Ray worker was lost ({why})"})
                    continue
                if kind == "measure":
                    say({"op": "done", "id": ident, "worker": worker, "result": value})
                else:
                    say(dict(self.store(value) if value.get("ok") else value, op="built", id=ident))


def main():
    parser = argparse.ArgumentParser(prog="python -m autokernel_ray")
    parser.add_argument("--address", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--backend", choices=["cuda", "host"], required=True)
    parser.add_argument("--host-workers", type=int, default=1)
    args = parser.parse_args()
    token = secrets.token_hex(4)  # names what this run leaves on the nodes, for clean_up
    local = None
    try:
        local = connect(args.address, args.host_workers if args.backend == "host" else 0)
        actors, workers = start_actors(os.path.abspath(args.cli), args.backend, args.host_workers, token)
    except Exception as error:  # connection refused, no GPU, a timeout: one line for the driver
        say({"op": "error", "reason": f"{type(error).__name__}: {error}".splitlines()[0]})
        clean_up([], token, local)
        return 2
    say({"op": "ready", "workers": workers})
    side = Side(os.path.abspath(args.cli), actors, token)
    stop = threading.Event()
    collector = threading.Thread(target=side.collect, args=(stop,), daemon=True)
    collector.start()
    for line in sys.stdin:
        ask = json.loads(line)
        if ask.get("op") == "quit":
            break
        (side.measure if ask.get("op") == "measure" else side.build)(ask)
    stop.set()
    collector.join()
    clean_up(actors, token, local)
    return 0


def clean_up(actors, token, local):
    """Ends the actors (their experiment servers die with them: PR_SET_PDEATHSIG), removes the
    run's files from every live node, leaves the cluster, and removes a local cluster's files."""
    try:
        for actor in actors:
            ray.kill(actor)
        if ray.is_initialized():
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
            cleaning = [clean_node.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
                        .remote(token) for node in ray.nodes() if node.get("Alive")]
            ray.get(cleaning, timeout=60)
    except Exception as error:  # a node gone meanwhile: what is left there is said, not fatal
        print(f"autokernel_ray: the run's files were not removed from every node: {error}", file=sys.stderr)
    finally:
        ray.shutdown()
        if local:
            shutil.rmtree(local, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
