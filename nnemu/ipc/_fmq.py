"""Fast message queues: the shared-memory channel of a burst, beside binder."""

FMQ_TRANSFER_NS = 5_000
"""Moving a packet through a fast message queue to a thread that is spinning on it."""
