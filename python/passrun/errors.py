"""Exceptions. Each carries the C library's message as it is, which already
says where (FILE:LINE:COL for programs and pipelines, a byte offset for a
binary file, the pass and node for a refusal), and the exit status the
passrun tool gives for the same failure (docs/passrun.1: 1 a pass or the
verifier, 2 a pipeline, plugin or option, 3 a program file, 4 a --check
mismatch, 5 the runtime)."""
import re

_LOCATION = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+)")


class PassrunError(Exception):
    """Base class: .message is the C error's text, .status the tool's exit
    status, .location (file, line, col) when the message starts with one."""
    status = 1

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    @property
    def location(self):
        m = _LOCATION.match(self.message)
        return (m["file"], int(m["line"]), int(m["col"])) if m else None


class PassError(PassrunError):
    """A pass or the verifier refused the program."""
    status = 1


class PipelineError(PassrunError):
    """A bad pipeline, pass option, --set, plugin or argument."""
    status = 2


class ProgramError(PassrunError):
    """A program file or text that cannot be read or parsed."""
    status = 3


class MismatchError(PassrunError):
    """--check found an output that differs from the reference interpreter."""
    status = 4


class RuntimeFailure(PassrunError):
    """The runtime failed: a kernel, a device, a placement violation."""
    status = 5


class LibraryNotFoundError(PassrunError):
    """libpassrun.so (or the runtime library) could not be found or loaded."""
    status = 2


BY_STATUS = {1: PassError, 2: PipelineError, 3: ProgramError, 4: MismatchError,
             5: RuntimeFailure}
