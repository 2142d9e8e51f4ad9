"""Errors that speak to the user: each names the field, the bad value and what is allowed."""


class ConfigError(ValueError):
    """Bad input from a user: the command line turns it into one line on stderr and exit code 2."""

    def __init__(self, field: str, value, allowed: str | None = None, choices=None):
        self.field, self.value = field, value
        if choices is not None:
            allowed = "choose one of: " + ", ".join(str(c) for c in choices)
        message = f"{field}: invalid value {value!r}"
        if allowed:
            message += f"; {allowed}"
        super().__init__(message)


def check(condition: bool, field: str, value, allowed: str) -> None:
    """Raise a ConfigError unless condition holds."""
    if not condition:
        raise ConfigError(field, value, allowed)


class SweepFailed(RuntimeError):
    """Some runs of a sweep raised while the others finished: the message is a table with every
    run's status. The command line prints it and exits 1."""


class DamagedRun(ConfigError):
    """A run folder with a missing or unreadable file (a disk that filled up, a copy cut short, an edit
    by hand; the store's own writes are atomic). One line names the run, the file and what is wrong."""

    REMEDY = "training the same config again replaces the run, or delete its folder"

    def __init__(self, run_id: str, file: str, problem: str, remedy: str | None = None):
        self.field, self.value = "run", run_id
        problem = " ".join(str(problem).split())  # one line, and a short one: parsers can write paragraphs
        self.run_id, self.file = run_id, file
        self.problem = problem if len(problem) <= 200 else problem[:197] + "..."
        self.remedy = remedy or self.REMEDY
        ValueError.__init__(self, f"run {run_id}: damaged {file} ({self.problem}); {self.remedy}")

    def with_remedy(self, remedy: str | None) -> "DamagedRun":
        return DamagedRun(self.run_id, self.file, self.problem, remedy) if remedy else self


class MissingSystemPackage(RuntimeError):
    """Something this machine lacks and pip cannot install (a browser for figure export): the command
    line prints the one-line message, which names what to install, and exits 1."""
