"""`autokernel optimize --ray` on a Ray cluster of two nodes on this machine (ray.cluster_utils):
the host backend's experiments measured by an actor on each node and compiled by tasks on their
CPUs; a node removed in the middle of the run loses no experiment; a cheat an agent submits
through a remote worker is rejected as it is on one machine; nothing of the run outlives it.
"""
import csv
import os
import pathlib
import shutil
import subprocess
import tempfile
import time
import unittest

try:
    import ray  # noqa: F401
    from ray.cluster_utils import Cluster
except ImportError:  # the project's .venv has it (python/requirements.txt)
    Cluster = None

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "kernels"
CLI = os.environ.get("AK_CLI_PATH", str(ROOT / "build" / "autokernel"))
PLAN = ('{"name": "test", "shares_from_baselines": false, "kernels": [{"name": "sum", "op": "reduce", '
        '"file": "kernels/sum/sum.cpp", "shape": "48x1024", "dtype": "fp32", "share": 0.5}]}')


def make_workspace(parent):
    workspace = pathlib.Path(parent) / "workspace"
    (workspace / "kernels" / "sum").mkdir(parents=True)
    shutil.copy(KERNELS / "loop_modes.cpp", workspace / "kernels" / "sum" / "sum.cpp")
    (workspace / "plan.json").write_text(PLAN)
    return workspace


def results(workspace):
    path = workspace / "results.tsv"
    if not path.exists():
        return []
    with open(path) as table:
        return list(csv.DictReader(table, delimiter="\t"))


def optimize(workspace, address, *extra):
    return [CLI, "optimize", "--workspace", str(workspace), "--backend", "host", "--max-time", "0.2",
            "--json", "--ray", address, *extra]


def run_files():
    """What a run leaves in the nodes' temporary directory (one machine here) if it does not clean up."""
    tmp = tempfile.gettempdir()
    return {p.name for p in pathlib.Path(tmp).glob("autokernel-ray-*")} | \
        {p.name for p in pathlib.Path(tmp).glob("autokernel-build-*")}


def descendants(pid):
    """Every process below `pid` (from /proc): the cluster's nodes are this test's children."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in pathlib.Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def measuring_processes():
    """This test's processes that measure for a run: actors and their experiment servers."""
    lines = []
    for pid in descendants(os.getpid()):
        try:
            args = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "ray::Measurer" in args or "worker --serve" in args:
            lines.append(args.strip())
    return lines


@unittest.skipIf(Cluster is None, "no Ray in this Python")
class TwoNodeCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Ray's own files (sessions, logs, sockets) in a directory of the test's, removed at the end.
        cls.ray_files = tempfile.mkdtemp(prefix="akr-")
        cls.saved_tmpdir = os.environ.get("RAY_TMPDIR")
        os.environ["RAY_TMPDIR"] = cls.ray_files
        # Logical CPUs: each node holds an actor and room for compile tasks.
        cls.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 3})
        cls.second = cls.cluster.add_node(num_cpus=3)
        cls.cluster.wait_for_nodes()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.shutdown()
        if cls.saved_tmpdir is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = cls.saved_tmpdir
        shutil.rmtree(cls.ray_files, ignore_errors=True)

    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="autokernel-test-ray-cluster-")
        self.addCleanup(shutil.rmtree, self.scratch, ignore_errors=True)
        self.before = run_files()

    def tearDown(self):
        self.assertEqual(run_files() - self.before, set(), "the run left files on the nodes")

    def test_a_node_removed_mid_run_loses_no_experiment(self):
        workspace = make_workspace(self.scratch)
        run = subprocess.Popen(optimize(workspace, self.cluster.address, "--workers", "2", "--timeout", "20",
                                        "--strategy", "exhaustive", "--patience", "20", "--budget", "7"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 300
        while len(results(workspace)) < 2 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        self.cluster.remove_node(self.second)
        output, _ = run.communicate(timeout=900)
        self.assertEqual(run.returncode, 0, output)
        rows = results(workspace)
        self.assertEqual([r["experiment"] for r in rows], [str(i) for i in range(1, 8)], output)
        self.assertEqual(rows[0]["decision"], "baseline", rows[0]["reason"])
        for row in rows:
            self.assertIn(row["status"], {"PASS", "FAIL", "CRASH", "TIMEOUT", "LOST"}, row)
            if row["status"] == "LOST":  # lost twice: said why, and never a time
                self.assertEqual(row["decision"], "failed")
                self.assertTrue(row["reason"])
        self.assertTrue(all(r["worker"].count("/cpu") == 1 for r in rows if r["worker"]), rows)
        self.assertEqual(measuring_processes(), [], "a measuring process outlived the run")

    def test_a_cheat_through_a_remote_worker_is_rejected(self):
        workspace = make_workspace(self.scratch)
        state = pathlib.Path(self.scratch) / "agent-state"
        state.mkdir()
        agent = f"sh '{ROOT / 'tests' / 'loop_agents' / 'cheating.sh'}' '{state / 'calls'}'"
        env = dict(os.environ, AUTOKERNEL_AGENT_WRITABLE=str(state))
        run = subprocess.run(optimize(workspace, self.cluster.address, "--timeout", "40", "--agent-cmd", agent,
                                      "--agent-timeout", "30", "--patience", "4"),
                             capture_output=True, text=True, env=env, timeout=900)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        rows = results(workspace)
        self.assertGreaterEqual(len(rows), 4)
        self.assertEqual(rows[0]["decision"], "baseline", rows[0]["reason"])
        expected = [("FAIL", "unexpected message on the launch channel"), ("FAIL", "never written"),
                    ("CRASH", "called fork")]
        for row, (status, reason) in zip(rows[1:4], expected):
            self.assertEqual(row["status"], status, row["reason"])
            self.assertIn(reason, row["reason"])
        self.assertFalse([r for r in rows if r["decision"] == "kept"])
        self.assertTrue(all(r["worker"] for r in rows[:4]), rows)


if __name__ == "__main__":
    unittest.main()
