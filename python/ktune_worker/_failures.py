"""How a failing config reaches ktune: its status (a kernel that raised is `crashed`, one the device
cannot launch a `launch_error`) and its message (the exception, then its traceback, bounded)."""
import os
import traceback

# What an exception's message keeps of its traceback: enough to find the line, not a page of frames.
_TRACEBACK_LINES = 30
_TRACEBACK_CHARS = 4000
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class _Failure(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


# Exceptions that say a config does not fit the device (Triton's OutOfResources: more shared memory
# or registers than a block may have), known by name so that this module needs no Triton: a
# launch_error, as ktune's own backends report such a config, and the worker lives on (its CUDA
# context is intact), where a crash would cost a fresh worker.
_DOES_NOT_FIT = ("OutOfResources",)


def _run_failure(e: BaseException) -> "_Failure":
    return _Failure("launch_error" if type(e).__name__ in _DOES_NOT_FIT else "crashed", _describe(e))


def _describe(e: BaseException) -> str:
    """"ValueError: bad block" on the first line (what ktune's console shows), then the traceback,
    cut to its first and last frames when long."""
    head = f"{type(e).__name__}: {e}"
    head = head if len(head) <= 500 else head[:497] + "..."
    tb = traceback.TracebackException.from_exception(e)
    # This package's own frames (build, measure) say nothing about the kernel: the user's code is the story.
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if os.path.dirname(os.path.abspath(f.filename)) != _PACKAGE])
    lines = "".join(tb.format()).rstrip("\n").split("\n")
    if len(lines) > _TRACEBACK_LINES:
        lines = lines[:3] + [f"  ... ({len(lines) - _TRACEBACK_LINES + 4} lines left out)"] + lines[-(_TRACEBACK_LINES - 4):]
    text = "\n".join(lines)
    if len(text) > _TRACEBACK_CHARS:
        text = "..." + text[-_TRACEBACK_CHARS:]
    return head + "\n" + text
