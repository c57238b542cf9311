"""The bridge's entry point, run by the C++ CLI as `python3 -m autokernel <command> ...`
(profile, verify, export, prepare).

Progress goes to stderr as lines; results go to the files the command names. A failure is one
line, `autokernel: <reason>`, with exit code 2 for bad input and 1 for anything else.
"""
import argparse
import faulthandler
import importlib
import os
import signal
import sys
import traceback

COMMANDS = ("profile", "verify", "export", "prepare")


def _progress(line):
    print(f"autokernel: {line}", file=sys.stderr, flush=True)


def main(argv=None):
    # `kill -USR1 <pid>` prints every thread's stack and the run goes on: where a long step is.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    parser = argparse.ArgumentParser(prog="python3 -m autokernel", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    try:
        import torch  # noqa: F401  (a missing PyTorch is one line, not a traceback)
    except ImportError as e:
        print(f"autokernel: no PyTorch in {sys.executable}: {e}", file=sys.stderr)
        return 1
    from .loading import BridgeError

    modules = {name: importlib.import_module(f".{name}", __package__) for name in COMMANDS}
    for name, module in modules.items():
        module.add_arguments(commands.add_parser(name))
    args = parser.parse_args(argv)
    try:
        return getattr(modules[args.command], args.command)(args, _progress)
    except BridgeError as e:
        print(f"autokernel: {e}", file=sys.stderr)
        return 2 if e.usage else 1
    except Exception as e:
        if os.environ.get("AUTOKERNEL_DEBUG"):
            traceback.print_exc()
        first_line = (str(e).splitlines() or [""])[0][:300]
        print(f"autokernel: the bridge failed: {type(e).__name__}: {first_line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
