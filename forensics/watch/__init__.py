"""Watching memory move: the sampling loop on the host, conditions and trends."""
