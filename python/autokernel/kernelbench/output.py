"""How the Python half speaks to the C++ command: progress lines on stderr, and one result line on
stdout, `autokernel-record: <json>` (solution processes write to their own logs, never here)."""
import json
import sys

RECORD_PREFIX = "autokernel-record: "


def progress(line):
    print(f"autokernel: {line}", file=sys.stderr, flush=True)


def emit(document):
    print(RECORD_PREFIX + json.dumps(document), flush=True)
