"""A port for a server this process names before it starts (a local cluster's GCS, dashboard and Serve proxy; a JAX
distributed coordinator), picked where no other process on the machine is handed one meanwhile. No Ray, no JAX."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Above Ray's worker ports (`ray start` binds workers to 10002 to 19999; under ray.cluster_utils every Ray process binds
# port 0) and below the kernel's ephemeral range, where every socket bound to port 0 and every outgoing connection gets
# its port: a port picked there can be taken before its user binds it (a Serve proxy failed to bind one, "Failed to
# bind to address", beside another module's cluster).
FIRST_PORT = 20_000


def _ephemeral_start() -> int:
    try:  # Linux: "32768	60999" by default
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # the Linux default; IANA's dynamic range starts at 49152, above it


def free_port() -> int:
    """A port free on this machine now, chosen at random from FIRST_PORT up to the ephemeral range (or by the kernel,
    where that range starts lower)."""
    candidates = range(FIRST_PORT, _ephemeral_start())
    for port in random.SystemRandom().sample(candidates, min(100, len(candidates))):
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]
