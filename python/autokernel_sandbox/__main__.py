"""python3 -m autokernel_sandbox [--write DIR]... [--network] -- COMMAND [ARG]...

Runs COMMAND confined (the package's doc): files read-only except beneath each --write DIR (made
if missing), no TCP unless --network, no signal to a process outside. The engine starts agent
commands this way. Exit status: COMMAND's own; 2 with one line when the confinement cannot be
set up (no Landlock: set AUTOKERNEL_UNCONFINED=1 to run the command as it is) or the command
cannot be started.
"""
import argparse
import os
import sys

from . import Unconfined, confine_unless_trusted


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m autokernel_sandbox", description=__doc__.split("\n\n")[1])
    parser.add_argument("--write", action="append", default=[], metavar="DIR",
                        help="a directory the command may change (repeatable)")
    parser.add_argument("--network", action="store_true", help="leave TCP open")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG]...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run (after --)")
    try:
        confine_unless_trusted([os.path.abspath(d) for d in args.write], network=args.network)
    except (Unconfined, OSError) as e:
        print(f"autokernel_sandbox: cannot confine the command: {e} (AUTOKERNEL_UNCONFINED=1 runs it unconfined)",
              file=sys.stderr)
        return 2
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"autokernel_sandbox: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
