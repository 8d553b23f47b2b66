"""workloads.local_cluster without Ray: the ports its clusters are given (a GCS, a dashboard, Serve's proxy)."""

from __future__ import annotations

import socket

from workloads import local_cluster


def test_a_free_port_is_outside_the_ports_other_processes_are_given():
    # Every socket bound to port 0 and every outgoing connection takes a port of the kernel's ephemeral range, and
    # `ray start` gives workers 10002 to 19999: a port picked there could be taken before Serve's proxy binds it.
    ephemeral = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    ports = {local_cluster.free_port() for _ in range(50)}
    assert all(local_cluster.FIRST_PORT <= port < ephemeral for port in ports) and 19_999 < local_cluster.FIRST_PORT
    assert len(ports) > 40  # chosen at random: two clusters starting at once are unlikely to pick the same one
    with socket.socket() as s:
        s.bind(("", ports.pop()))  # and free


def test_a_port_in_use_is_never_given(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("", local_cluster.FIRST_PORT))
        monkeypatch.setattr(local_cluster, "_ephemeral_start", lambda: local_cluster.FIRST_PORT + 2)
        assert {local_cluster.free_port() for _ in range(20)} == {local_cluster.FIRST_PORT + 1}
