"""Where memory cgroups live on a host, and what counts as "no limit": one place for both.

Cgroup v1 mounts the memory controller at ``V1_ROOT``; v2 has one tree at ``V2_ROOT``.
A v1 limit of "unlimited" reads as the page counter's maximum (9223372036854771712 on
x86-64, a page-rounded 2**63-1), so anything from ``UNLIMITED_AT`` up means no limit.
"""

from __future__ import annotations

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
UNLIMITED_AT = 1 << 62
