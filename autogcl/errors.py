"""Error types the command line turns into clear one-line messages."""


class AutoGCLError(Exception):
    """Base class of the errors autogcl reports to the user without a traceback."""


class DataError(AutoGCLError, ValueError):
    """Missing, malformed or inconsistent input data (names the file and line or the index)."""


class ConfigError(AutoGCLError, ValueError):
    """An invalid option or a combination of options that cannot work."""


class DamagedFileError(DataError):
    """A file of a run (checkpoint, configuration) that cannot be read back."""


class TrainingError(AutoGCLError, RuntimeError):
    """Training cannot go on (for example a NaN loss); says where it happened."""


def write_failure(exc: OSError, out, what: str = "") -> DataError:
    """The :class:`DataError` for an output file ``out`` (``what``: e.g. "the figure ") that
    could not be written."""
    from pathlib import Path

    out = Path(out)
    why = (f"{out.parent} is not a folder" if isinstance(exc, (FileExistsError, NotADirectoryError))
           else exc.strerror or exc)
    return DataError(f"cannot write {what}{out} ({why}); choose another --out")
