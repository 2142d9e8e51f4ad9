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
