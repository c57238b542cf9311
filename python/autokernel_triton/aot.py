"""Ahead-of-time compiler of Triton kernel files into ak_launch modules (the Triton backend).

    python3 -m autokernel_triton.aot build --source kernels/triton/rmsnorm.py --out DIR \
        --arch sm_90a [-D BLOCK_N=4096 ...] [--jobs N]
    python3 -m autokernel_triton.aot version

`build` loads the file with the tuning values (spec.py), compiles every launch of its mapping
for every dtype it takes (and, where the launch says so, once more assuming 16-byte alignment)
with triton.compile for the fixed target (no GPU needed: Triton bundles ptxas), in parallel
worker processes, and writes DIR/k<i>.cubin and DIR/launcher.cpp (launcher.py). The engine
(src/runtime/triton_build.cpp) compiles launcher.cpp into the module and caches it by content.

Any error is one line on stderr, `FILE:LINE: message`, and exit code 2; fp32 tl.dot defaults to
IEEE precision (never a silent TF32).
"""
import argparse
import json
import os
import pathlib
import pickle
import re
import sys
import tempfile
import time
import traceback

from autokernel_sandbox import Unconfined, confine_unless_trusted
from autokernel_triton.spec import SpecError, kernel_line, load_module, parse_spec
from autokernel_triton.launcher import write_launcher

MIN_VERSION = (3, 3)
# Shared memory a block may opt into, per compute capability (the CUDA programming guide's table).
MAX_SHARED = {70: 98304, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448,
              100: 232448, 103: 232448, 120: 101376}
PARAM_BYTES = {"pointer": 8, "i32": 4, "i64": 8, "fp32": 4}
TRITON_TYPES = {"i32": "i32", "i64": "i64", "fp32": "fp32"}

_JOBS = []  # (launch, dtype, aligned), read by the forked workers
_SPEC = []  # the file's Spec, likewise (it holds kernels and lambdas: nothing to pickle)


def triton_version():
    import triton
    return triton.__version__


def check_aot_path():
    """Raises SpecError when this Triton lacks the ahead-of-time path used here."""
    import inspect
    import triton
    numbers = tuple(int(p) for p in re.findall(r"\d+", triton.__version__)[:2])
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource
        params = list(inspect.signature(ASTSource.__init__).parameters)
    except ImportError:
        params = []
    if numbers < MIN_VERSION or params[:5] != ["self", "fn", "signature", "constexprs", "attrs"]:
        raise SpecError(1, f"Triton {triton.__version__} has no ahead-of-time path this backend uses "
                           f"(triton.compile of an ASTSource(fn, signature, constexprs, attrs) for a "
                           f"GPUTarget); install Triton >= {'.'.join(map(str, MIN_VERSION))}")


def compile_jobs(spec):
    """The distinct compiles of a file: [(launch, dtype, aligned)], and for every (launch, dtype,
    aligned) the index of the job that builds it (dtypes whose signatures agree share one, as
    cross_entropy's fp32-only mean does)."""
    jobs, index, seen = [], {}, {}
    for launch in spec.launches():
        for dtype in launch.dtypes:
            for aligned in [True] * bool(launch.aligned) + [False] * launch.unaligned:
                signature = tuple(sorted(_signature(launch, dtype, spec)[0].items()))
                key = (id(launch), aligned, signature)
                if key not in seen:
                    seen[key] = len(jobs)
                    jobs.append((launch, dtype, aligned))
                index[(id(launch), dtype, aligned)] = seen[key]
    return jobs, index


def _signature(launch, dtype, spec):
    tensors = {t.name: t for t in spec.tensors}
    args = {a.name: a for a in launch.args}
    signature, constexprs = {}, {}
    for name, is_const, _ in launch.params:
        if is_const:
            if name in launch.constexprs:
                constexprs[name] = launch.constexprs[name]
                signature[name] = "constexpr"
            continue
        arg = args[name]
        signature[name] = ("*" + tensors[arg.tensor].resolved_dtype(dtype)) if arg.kind == "pointer" \
            else TRITON_TYPES[arg.kind]
    return signature, constexprs


def _compile(job_index, target_arch):
    """Compiles one job; returns (index, result dict) or (index, (line, message))."""
    spec = _SPEC[0]
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    launch, dtype, aligned = _JOBS[job_index]
    signature, constexprs = _signature(launch, dtype, spec)
    names = [p[0] for p in launch.params]
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in launch.aligned} if aligned else {}
    target = GPUTarget("cuda", target_arch, 32)
    options = {"num_warps": launch.num_warps, "num_stages": launch.num_stages,
               "default_dot_input_precision": "ieee"}
    try:
        source = ASTSource(fn=launch.kernel, signature=signature, constexprs=constexprs, attrs=attrs)
        compiled = triton.compile(source, target=target, options=options)
    except Exception as e:  # Triton's own error, at the kernel's line where it says
        return job_index, _triton_error(e, launch, spec)
    meta = compiled.metadata
    problem = _unsupported_metadata(meta, launch, target_arch)
    if problem:
        return job_index, (launch.line, f"{launch.name}: {problem}")
    # Global scratch: bytes per program (on-device tensor descriptors live there), which the
    # launcher allocates per launch for the whole grid.
    return job_index, {"cubin": compiled.asm["cubin"], "ptx": compiled.asm["ptx"], "name": meta.name,
                       "shared": int(meta.shared), "scratch": int(getattr(meta, "global_scratch_size", 0) or 0),
                       "scratch_align": int(getattr(meta, "global_scratch_align", 1) or 1)}


def _unsupported_metadata(meta, launch, arch):
    if getattr(meta, "profile_scratch_size", 0):
        return "needs a profiling scratch buffer (proton?), which ak_launch modules do not provide"
    if getattr(meta, "num_ctas", 1) != 1 or getattr(meta, "launch_cooperative_grid", False):
        return "needs a cluster or cooperative launch, which ak_launch modules do not make"
    if getattr(meta, "tensordesc_meta", None) or getattr(meta, "launch_pdl", False):
        return "needs host-side tensor descriptors or programmatic dependent launch"
    limit = MAX_SHARED.get(arch, 49152)
    if meta.shared > limit:
        return (f"needs {meta.shared} bytes of shared memory, more than sm_{arch}'s {limit} "
                f"(smaller blocks or fewer num_stages)")
    return None


def _triton_error(e, launch, spec):
    from triton.compiler.errors import CompilationError
    innermost = e
    while isinstance(innermost.__cause__, CompilationError):
        innermost = innermost.__cause__
    if isinstance(innermost, CompilationError) and getattr(innermost.node, "lineno", None):
        def_line = launch.line  # the src of a CompilationError starts at its function's `def`
        for candidate in spec.module.__dict__.values():
            if getattr(candidate, "src", None) == innermost.src and hasattr(candidate, "fn"):
                def_line = kernel_line(candidate)
        line = def_line + innermost.node.lineno - 1
        lines = str(innermost.error_message or innermost.__cause__ or "").strip().splitlines()
        return line, f"{launch.name}: {lines[-1] if lines else type(innermost).__name__}"
    lines = [l for l in str(e).strip().splitlines() if l.strip()]
    return launch.line, f"{launch.name}: {type(e).__name__}: {lines[-1] if lines else ''}"[:400]


def ptx_param_bytes(ptx):
    """Byte sizes of the kernel entry's parameters, in order, from the PTX."""
    match = re.search(r"\.entry\s+\w+\s*\((.*?)\)", ptx, re.S)
    if not match:
        raise ValueError("no .entry in the PTX")
    sizes = []
    for kind in re.findall(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)", match.group(1)):
        bits = re.search(r"\d+", kind)
        sizes.append(int(bits.group()) // 8 if bits else 0)
    return sizes


def _check_params(launch, result):
    """The entry's parameters are the launch's arguments and then Triton's own scratch pointers
    (none, one or two by version: global, then profiling), which the launcher passes as null
    unless the cubin needs global scratch. Returns how many extras."""
    sizes = ptx_param_bytes(result["ptx"])
    wanted = [PARAM_BYTES[a.kind] for a in launch.args]
    extras = sizes[len(wanted):]
    if sizes[:len(wanted)] != wanted or any(s != 8 for s in extras) or len(extras) > 2:
        raise SpecError(launch.line, f"{launch.name}: its compiled parameters ({sizes} bytes) are not its "
                                     f"arguments ({wanted} bytes) and Triton's scratch pointers")
    return len(extras)


def probe_grids(spec):
    """Every grid at the smallest problem (every size 1) must be positive and within CUDA's
    limits: a grid of zero or of billions there is a mapping error, not a big problem."""
    class Probe:
        shape = [1] * 4

        def stride(self):
            return [1] * 4

    env = {"tensors": {t.name: Probe() for t in spec.tensors}, "scalars": {s: 1.0 for s in spec.scalars}}
    for launch in spec.launches():
        for d, g in enumerate(launch.grid):
            try:
                value = g.evaluate(env)
            except (ValueError, ZeroDivisionError) as e:
                raise SpecError(_line_of(spec, g.text, launch), f"{launch.name}: grid: {e}") from None
            limit = 2**31 - 1 if d == 0 else 65535
            if not 1 <= value <= limit:
                raise SpecError(_line_of(spec, g.text, launch),
                                f"{launch.name}: grid dimension {d} '{g.text}' is {value} for a problem whose "
                                f"every size is 1 (CUDA takes 1..{limit})")


def _line_of(spec, text, launch):
    return spec.locator.line(text, spec.locator.name_line(launch.name))


def _confine(out):
    """From here on the file's code may change nothing but `out` (autokernel_sandbox): Triton's cache
    and temporary files (ptxas's) go beneath it too."""
    for variable, directory in (("TMPDIR", out / "tmp"), ("TRITON_CACHE_DIR", out / "triton-cache")):
        directory.mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(directory)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        confine_unless_trusted([str(out)])
    except Unconfined as e:
        raise SpecError(1, f"refusing to run this kernel file's code unconfined: {e.strerror} "
                           f"(AUTOKERNEL_UNCONFINED=1 runs a trusted file without it)") from None


def _compile_in_forks(workers, arch_number):
    """Every job compiled once across `workers` forked processes, each sending its results back
    pickled on a pipe. (Not a multiprocessing pool: its locks are POSIX semaphores, files in
    /dev/shm, which the confined compiler may not create.)"""
    children = []
    for worker in range(workers):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            code = 0
            try:
                results = [_compile(i, arch_number) for i in range(worker, len(_JOBS), workers)]
                with os.fdopen(write_end, "wb") as channel:
                    pickle.dump(results, channel)
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        os.close(write_end)
        children.append((pid, read_end))
    results = []
    for pid, read_end in children:  # each child writes only its own pipe: reading in turn cannot block
        with os.fdopen(read_end, "rb") as channel:
            data = channel.read()
        _, status = os.waitpid(pid, 0)
        if status != 0 or not data:
            raise SpecError(1, f"a compiler worker failed (wait status {status})")
        results.extend(pickle.loads(data))
    return results


def build(source, out, arch, defines, max_workers, write_ptx=False):
    start = time.time()
    check_aot_path()
    _confine(out)
    module, tree = load_module(source, defines)
    spec = parse_spec(source, module, tree)
    spec.module = module
    probe_grids(spec)
    jobs, job_of = compile_jobs(spec)
    _JOBS[:] = jobs
    _SPEC[:] = [spec]
    arch_number = int(re.search(r"\d+", arch).group())
    workers = max(1, min(max_workers, len(_JOBS)))
    if workers == 1:
        results = [_compile(i, arch_number) for i in range(len(_JOBS))]
    else:
        results = _compile_in_forks(workers, arch_number)
    cubins = []
    for index, result in sorted(results, key=lambda r: r[0]):
        launch, dtype, aligned = _JOBS[index]
        if isinstance(result, tuple):
            raise SpecError(*result)
        launch.extra_params = _check_params(launch, result)
        path = out / f"k{index}.cubin"
        path.write_bytes(result["cubin"])
        if write_ptx:
            path.with_suffix(".ptx").write_text(result["ptx"])
        label = f"{launch.name} {dtype}{' aligned' if aligned else ''}"
        cubins.append((path.resolve(), launch, result["name"], result["shared"], label,
                       result["scratch"], result["scratch_align"]))
    (out / "launcher.cpp").write_text(write_launcher(spec, cubins, job_of, source.name))
    return {"cubins": len(cubins), "seconds": round(time.time() - start, 3), "workers": workers}


def main(argv=None):
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when it is unset
    parser = argparse.ArgumentParser(prog="autokernel_triton.aot", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--source", required=True, type=pathlib.Path)
    b.add_argument("--out", required=True, type=pathlib.Path)
    b.add_argument("--arch", default="sm_90a")
    b.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    b.add_argument("--ptx", action="store_true", help="also write each cubin's PTX (k<i>.ptx)")
    sub.add_parser("version")
    a = parser.parse_args(argv)
    if a.command == "version":
        print(triton_version())
        return 0
    source = a.source.absolute()  # as given (the engine passes it absolute): its errors name it so
    try:
        defines = dict(d.split("=", 1) for d in a.define)
        a.out.mkdir(parents=True, exist_ok=True)
        summary = build(source, a.out, a.arch, defines, a.jobs, a.ptx)
    except SpecError as e:
        print(f"{source}:{e.line}: {e.message}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
