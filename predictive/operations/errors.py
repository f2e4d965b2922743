"""The errors an operation raises for a bad request; every front door shows them as they are."""

from __future__ import annotations


class Invalid(ValueError):
    """A request does not hold together (raised while it is built); its text is shown as is."""


class ArgumentError(ValueError):
    """One argument of a request is wrong: ``argument`` names it (snake_case)."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        self.message = message
        super().__init__(f"{argument}: {message}" if argument else message)
