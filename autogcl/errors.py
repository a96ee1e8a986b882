"""Error types the command line turns into clear one-line messages."""


class AutoGCLError(Exception):
    """Base class of the errors autogcl reports to the user without a traceback."""


class DataError(AutoGCLError, ValueError):
    """Missing, malformed or inconsistent input data (names the file and line or the index)."""


class ConfigError(AutoGCLError, ValueError):
    """An invalid option or a combination of options that cannot work."""


class DamagedFileError(DataError):
    """A file of a run (checkpoint, configuration) that cannot be read back."""


class StorageError(AutoGCLError, OSError):
    """A file could not be written (a full disk, a file-size limit, no permission): names the
    file and why; the file's previous version is kept. ``errno``, ``strerror`` (the operating
    system's reason) and ``filename`` as :class:`OSError`'s."""

    def __init__(self, message: str, errno: int | None = None, filename=None, reason: str | None = None):
        super().__init__(message)
        self.message, self.errno, self.filename, self.strerror = message, errno, filename, reason

    def __str__(self) -> str:
        return self.message


class TrainingError(AutoGCLError, RuntimeError):
    """Training cannot go on (for example a NaN loss); says where it happened."""


def write_failure(exc: OSError, out, what: str = "") -> DataError:
    """The :class:`DataError` for an output file ``out`` (``what``: e.g. "the figure ") that
    could not be written."""
    from pathlib import Path

    out = Path(out)
    if isinstance(exc, StorageError) and isinstance(exc.__cause__, OSError):
        exc = exc.__cause__  # the operating system's own error
    why = (f"{out.parent} is not a folder" if isinstance(exc, (FileExistsError, NotADirectoryError))
           else exc.strerror or exc)
    return DataError(f"cannot write {what}{out} ({why}); choose another --out")


class Preempted(AutoGCLError):
    """Training was stopped by a signal (SIGTERM: how SLURM and Kubernetes preempt a job;
    SIGINT: Ctrl-C). ``checkpoint``: the file written at the stop, from which the same call
    (or command with ``--resume``) continues with the numbers of an uninterrupted run
    (``None`` where none was asked for); ``epoch``: the last finished epoch there;
    ``exit_code``: the shell's code for the signal (143, 130); ``progress``: set by
    :func:`autogcl.train.loop.run_epoch` when it stopped between two steps, what the finished
    steps of the epoch did (:func:`autogcl.train.loop.finished_steps`), else ``None``."""

    progress: dict | None = None

    def __init__(self, signum: int, epoch: int | None = None, checkpoint=None, where: str = ""):
        import signal as _signal

        self.signum, self.epoch, self.checkpoint, self.where = signum, epoch, checkpoint, where
        self.signal_name = _signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(self._message())

    @property
    def headline(self) -> str:
        """``stopped by SIGTERM after epoch E`` (the epoch where known)."""
        return f"stopped by {self.signal_name}" + ("" if self.epoch is None else f" after epoch {self.epoch}")

    @property
    def details(self) -> str:
        """Where it stopped and what was kept (may be empty)."""
        kept = (f"checkpoint {self.checkpoint}" if self.checkpoint is not None
                else "no checkpoint was asked for (pass checkpoint= to make the fit resumable)"
                if self.epoch is not None else "")
        return "; ".join(p for p in (self.where, kept) if p)

    def _message(self) -> str:
        return self.headline + (f" ({self.details})" if self.details else "")

    def located(self, epoch: int | None, checkpoint, where: str = "") -> "Preempted":
        """This stop with where it happened filled in (the innermost caller that knows wins)."""
        if self.epoch is None and epoch is not None:
            self.epoch = epoch
        if self.checkpoint is None and checkpoint is not None:
            self.checkpoint = checkpoint
        if not self.where and where:
            self.where = where
        self.args = (self._message(),)
        return self


class OutOfMemory(TrainingError):
    """The device ran out of memory during a training step; says where, how large the batch was
    and what to change (the checkpoint of the last finished epoch is kept)."""
