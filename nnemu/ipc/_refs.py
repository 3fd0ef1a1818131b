"""Binder references to a client's callback objects, as a driver is handed them."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from nnemu.ipc._binder import Endpoint


@attrs.frozen
class CallbackRef:
    """A client's callback object as the driver holds it: where it lives and what to call."""

    endpoint: Endpoint
    """The client process."""
    target: Callable[..., None]
    """The client-side ``notify`` implementation (latches the first call)."""
