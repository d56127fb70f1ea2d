"""Drover's first-party Python client (docs/python.md).

- drover.Client: enqueue (one and many), revoke, job status and schedules
  straight on Redis, with the Lua the Go code runs (generated from
  queue/scripts.go; see drover/scripts/).
- drover.HTTPClient: the same producer calls over the web API (/api/v1)
  with a token, standard library only.
- drover.pool: serve Python functions as a pooled child of `drover worker`.
"""

from .errors import DroverError, InvalidArgument, LayoutError, OutcomeUnknown
from .http import HTTPClient
from .types import Durable, Job, JobStatus, Schedule

__all__ = ["Client", "HTTPClient", "Job", "JobStatus", "Schedule", "DroverError", "InvalidArgument", "LayoutError", "OutcomeUnknown", "Durable", "new_id"]
__version__ = "0.1.0"


def __getattr__(name):  # Client needs redis-py; import it lazily
    if name == "Client":
        from .client import Client
        return Client
    if name == "new_id":
        from .ids import new_id
        return new_id
    raise AttributeError(name)
