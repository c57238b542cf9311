"""`python -m autokernel.kernelbench <list|eval|map>`: the Python half of `autokernel
kernelbench`, run by the C++ command (src/cli/kernelbench*.cpp).

Progress goes to stderr as `autokernel: ...` lines. A result is one stdout line,
`autokernel-record: <json>`; the judge's solution processes write only to their own logs, so no
line of theirs can reach this stdout. A failure is one line `autokernel: <reason>`, exit code 2
for bad input (a problem not in KernelBench's format, a missing file) and 1 for anything else.
"""
import argparse
import os
import sys
import traceback

from .output import emit, progress


def run_list(args):
    from . import problems

    directory = problems.default_directory(args.dir)
    found = problems.discover(directory, {args.level} if args.level else None, problems.numbers(args.problems))
    rows = []
    for problem in found:
        row = {"key": problem.key, "level": problem.level, "number": problem.number, "name": problem.name,
               "path": str(problem.path)}
        try:
            loaded = problems.load(problem, args.shrink)
            described = problems.shapes(loaded)
            row["inputs"] = [{"shape": list(s) if s is not None else None, "dtype": d} for s, d in described or []]
        except problems.ProblemError as e:
            row["error"] = str(e)
        rows.append(row)
    emit({"directory": str(problems.levels_root(directory)), "problems": rows})
    return 0


def run_eval(args):
    from . import problems
    from .evaluate import Options, evaluate
    from .timing import Settings

    problem = problems.find(problems.default_directory(args.dir), args.problem)
    settings = Settings(max_time_s=args.max_time, min_rounds=args.min_rounds, call_timeout_s=args.call_timeout)
    baselines = tuple(b for b in args.baselines.split(",") if b and b != "none")
    unknown = set(baselines) - {"eager", "compile"}
    if unknown:
        raise problems.ProblemError(f"unknown baseline {sorted(unknown)[0]} (eager, compile or none)")
    options = Options(device=args.device, precision=args.precision, trials=args.trials, baselines=baselines,
                      timing=not args.no_timing, settings=settings, build_timeout_s=args.build_timeout,
                      shrink=args.shrink, criterion=args.criterion, solution_mode=args.solution_mode,
                      compile_mode=args.compile_mode)
    record = evaluate(problem, args.solution, options, progress)
    emit(record)
    return 0


def add_eval_arguments(parser):
    parser.add_argument("--problem", required=True)
    parser.add_argument("--solution", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--baselines", default="eager,compile")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--max-time", type=float, default=5.0)
    parser.add_argument("--min-rounds", type=int, default=10)
    parser.add_argument("--call-timeout", type=float, default=60.0)
    parser.add_argument("--build-timeout", type=float, default=600.0)
    parser.add_argument("--criterion", default="kernelbench", choices=("kernelbench", "model"),
                        help="kernelbench: its allclose and our relative error; model: the relative error alone "
                             "(a whole model's outputs, as verify compares them)")
    parser.add_argument("--solution-mode", default="eager",
                        help="eager, or the torch.compile mode the solution is timed in")
    parser.add_argument("--compile-mode", default="",
                        help="the compile baseline's torch.compile mode (default: torch.compile's own)")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m autokernel.kernelbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "eval", "map"):
        sub = commands.add_parser(name)
        sub.add_argument("--dir", help="KernelBench problems (levelN/ directories); default "
                                       "$AUTOKERNEL_KERNELBENCH or the shared copy")
        sub.add_argument("--shrink", type=int, default=1, help="divide the problems' size constants by this")
        if name in ("list", "map"):
            sub.add_argument("--level", type=int)
            sub.add_argument("--problems", help="numbers, e.g. 1,23,95")
    add_eval_arguments(commands.choices["eval"])
    from . import mapping

    mapping.add_arguments(commands.choices["map"])
    args = parser.parse_args(argv)
    from .isolation import die_with_parent
    from .problems import ProblemError, first_line

    die_with_parent(os.getppid())
    try:
        return {"list": run_list, "eval": run_eval, "map": mapping.run}[args.command](args)
    except ProblemError as e:
        print(f"autokernel: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        if os.environ.get("AUTOKERNEL_DEBUG"):
            traceback.print_exc()
        print(f"autokernel: the KernelBench judge failed: {type(e).__name__}: {first_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
