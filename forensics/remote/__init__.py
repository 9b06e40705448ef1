"""Talking to a host: the host script, its framing, the transport, the bundle on disk."""
