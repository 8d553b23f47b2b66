"""kubectl against one context, every read as JSON (a test puts a recorded-response `kubectl` on PATH)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Optional


class KubectlError(RuntimeError):
    pass


class Kubectl:
    """kubectl against one context; every read asks for JSON."""

    def __init__(
        self, context: str, kubeconfig: Optional[Path] = None, executable: str = "kubectl", timeout: float = 120
    ):
        self.base = [executable, "--context", context] + (["--kubeconfig", str(kubeconfig)] if kubeconfig else [])
        self.timeout = timeout

    def run(self, *args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                [*self.base, *args], input=stdin, capture_output=True, text=True, timeout=self.timeout
            )
        except FileNotFoundError:
            raise KubectlError(f"{self.base[0]} is not installed or not on PATH") from None
        except subprocess.TimeoutExpired:
            raise KubectlError(f"kubectl {' '.join(args)} did not answer within {self.timeout:.0f}s") from None

    def json(self, *args: str, stdin: Optional[str] = None, missing_ok: bool = False) -> Optional[dict]:
        done = self.run(*args, "-o", "json", stdin=stdin)
        if done.returncode != 0:
            if missing_ok and "(NotFound)" in done.stderr:
                return None
            raise KubectlError(f"kubectl {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise KubectlError(f"kubectl {' '.join(args)} printed no JSON") from None

    def get(self, kind: str, name: str, namespace: str) -> Optional[dict]:
        return self.json("get", kind.lower(), name, "-n", namespace, missing_ok=True)

    def items(self, *args: str) -> list[dict]:
        return (self.json("get", *args) or {}).get("items", [])
