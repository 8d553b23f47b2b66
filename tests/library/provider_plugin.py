"""The component provider's plugin process, started as Pulumi's language host starts it (library/test_provider.py
from this checkout, library/test_library.py from an installed copy of the package)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import grpc
from google.protobuf import empty_pb2
from helpers import ROOT
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

PROVIDER = ROOT / "provider"


def serve(python: str, provider: Path = PROVIDER, env: dict | None = None) -> tuple[dict, str]:
    """Start the plugin as the language host does (`python <folder> <engine address>`): it prints the port it serves
    on. Ask it over gRPC for its schema and version, then stop it."""
    process = subprocess.Popen([python, str(provider), "127.0.0.1:1"], cwd=provider, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = process.stdout.readline().decode().strip()
        assert port.isdigit(), process.stderr.read().decode()[-3000:]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            served = json.loads(stub.GetSchema(provider_pb2.GetSchemaRequest(), timeout=60).schema)
            info = stub.GetPluginInfo(empty_pb2.Empty(), timeout=60)
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()
        process.stderr.close()
    return served, info.version
