"""workloads.ports without Ray: the ports the local clusters (a GCS, a dashboard, Serve's proxy) and JAX's distributed
coordinators are given."""

from __future__ import annotations

import socket
import sys

from workloads import ports


def test_a_free_port_is_outside_the_ports_other_processes_are_given():
    # Every socket bound to port 0 and every outgoing connection takes a port of the kernel's ephemeral range, and
    # `ray start` gives workers 10002 to 19999: a port picked there could be taken before Serve's proxy binds it.
    ephemeral = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    given = {ports.free_port() for _ in range(50)}
    assert all(ports.FIRST_PORT <= port < ephemeral for port in given) and 19_999 < ports.FIRST_PORT
    assert len(given) > 40  # chosen at random: two clusters starting at once are unlikely to pick the same one
    with socket.socket() as s:
        s.bind(("", given.pop()))  # and free


def test_a_port_in_use_is_never_given(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("", ports.FIRST_PORT))
        monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports.FIRST_PORT + 2)
        assert {ports.free_port() for _ in range(20)} == {ports.FIRST_PORT + 1}


def test_the_local_clusters_and_the_coordinators_take_their_ports_here(monkeypatch):
    import types

    from workloads import local_cluster, tpu_smoke, train_loop

    assert local_cluster.free_port is ports.free_port
    fake_ray = types.SimpleNamespace(util=types.SimpleNamespace(get_node_ip_address=lambda: "10.0.0.7"))
    monkeypatch.setitem(sys.modules, "ray", fake_ray)  # the address's host is Ray's node address
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports.FIRST_PORT + 2)
    with socket.socket() as taken:
        taken.bind(("", ports.FIRST_PORT))
        assert tpu_smoke._coordinator_address() == ("10.0.0.7", ports.FIRST_PORT + 1)
        assert train_loop._coordinator_address() == f"10.0.0.7:{ports.FIRST_PORT + 1}"
