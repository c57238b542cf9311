"""Statuses and their one-line reasons, decided in the judge from what the judge itself saw: the
solution process's answer (or its silence, or its death), the outputs and inputs in the shared
buffers, and the probe's fingerprints.

COMPILE_ERROR  the solution did not import, build or construct
INCORRECT      an output is wrong, unwritten, written off the stream or after the call; an input
               was changed; the wrong shape or dtype; a replaced timer or torch function; a forged
               message on the channel
TIMEOUT        no answer in time (the process group is killed)
CRASH          the forward raised, or the process died
PASS           every check of every trial and every timed call held
"""
from dataclasses import dataclass

STATUSES = ("PASS", "COMPILE_ERROR", "INCORRECT", "TIMEOUT", "CRASH")
_FAIL_STATUS = {"import": "COMPILE_ERROR", "build": "COMPILE_ERROR", "forward": "CRASH",
                "output": "INCORRECT", "patched": "INCORRECT"}
MIN_PROBED_ELEMENTS = 16  # below this, a result equal to stale memory by chance is not evidence


class Rejected(Exception):
    def __init__(self, status, reason, phase=""):
        super().__init__(reason)
        self.status, self.reason, self.phase = status, reason, phase


def from_answer(answer, solver, phase, timeout):
    """The Rejected for an answer other than ok."""
    if answer.kind == "fail":
        status = _FAIL_STATUS.get(answer.detail, "CRASH")
        return Rejected(status, solver.reason(f"the solution failed ({answer.detail})"), phase)
    if answer.kind == "timeout":
        return Rejected("TIMEOUT", f"no answer within {timeout:g} s", phase)
    if answer.kind == "died":
        return Rejected("CRASH", solver.reason(f"the solution process {answer.detail}"), phase)
    return Rejected("INCORRECT", f"forged message on the judge's channel: {answer.detail!r}", phase)


@dataclass
class Probe:
    held: bool  # both early looks happened while the current stream was still held
    early: int
    later: int
    late: int  # after the call had returned and a pause had passed


def probe_reason(probe, final, inputs, numel, gpu):
    """Why a gated call's result was not computed on the current stream within the call, or None.
    `final` is the judge's fingerprint of the output buffer, `inputs` those of the inputs."""
    if gpu and probe.held and probe.early != probe.later:
        return "the result changed while the current stream was held: work on another stream"
    if gpu and probe.held and probe.later == final and numel >= MIN_PROBED_ELEMENTS and final not in inputs:
        return "the result was complete before any work on the current stream ran: computed outside it"
    if probe.late != final:
        return "the result changed after the call returned: work left running (a thread or another stream)"
    return None
