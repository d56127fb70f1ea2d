"""Errors the client raises."""


class DroverError(Exception):
    """A call Drover refused or could not complete."""


class LayoutError(DroverError):
    """The Redis holds a Drover layout version this client does not speak."""
