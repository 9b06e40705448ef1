"""Hostile hosts, files and inputs: what an attacker controls, and tests that nothing of it
hangs past a deadline, grows without bound, or reaches the operator's terminal raw."""
