"""The error every bad input of the matrix raises (config.yaml, a scenario, a tool entry, a
recording): its message names the file, the field and what would fix it, so a stage can print
it as it is and stop before any job runs."""


class ConfigError(Exception):
    """A bad input: the message names the file, the field and the fix."""
