"""Message ids: unique, URL-safe, sortable by creation time."""

import secrets
import time


def new_id() -> str:
    """A generated message id: 'py-' + time in ns (hex) + 8 random bytes (hex).

    Any non-empty string is a valid id; a caller-chosen id (an idempotency
    key) is remembered for the dedupe window (24 h by default)."""
    return f"py-{time.time_ns():x}-{secrets.token_hex(8)}"
