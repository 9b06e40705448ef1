"""Pure readers of kernel log text: time stamps, OOM reports, faults, hung tasks, machine
checks. ``forensics/kernel/xid.py`` reads NVIDIA Xid lines. Each takes lines, returns facts."""
