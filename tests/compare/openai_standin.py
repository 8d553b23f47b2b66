"""A stand-in OpenAI-compatible streaming server for the LLM load generator's tests: a raw asyncio HTTP/1.1 server on
loopback whose delays are known. Each request to /v1/completions or /v1/chat/completions is answered with server-sent
events: the first text chunk `ttft_s` after the request arrived, then one chunk every `itl_s` until `max_tokens`
chunks, a usage chunk, and `data: [DONE]`. `hold_until` (a count) makes the server hold every answer until that many
requests have arrived: a client that waited on answers before sending would never get there."""

from __future__ import annotations

import asyncio
import json
import threading
import time


class StandIn:
    def __init__(self, ttft_s: float, itl_s: float, hold_until: int = 0, words_per_token: int = 1):
        self.ttft_s, self.itl_s, self.hold_until = ttft_s, itl_s, hold_until
        self.arrived: list[float] = []  # the server loop's clock
        self.arrived_epoch: list[float] = []  # time.time(), for scripts that follow the first arrival
        self.bodies: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.all_arrived = None
        self.port = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def _handle(self, reader, writer) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        path = lines[0].split()[1]
        length = next((int(h.split(":")[1]) for h in lines[1:] if h.lower().startswith("content-length")), 0)
        body = json.loads(await reader.readexactly(length)) if length else {}
        self.arrived.append(self.loop.time())
        self.arrived_epoch.append(time.time())
        self.bodies.append(body)
        if self.hold_until and len(self.arrived) >= self.hold_until:
            self.all_arrived.set()
        if path == "/v1/models":
            payload = json.dumps({"data": [{"id": "stand-in-model"}]}).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(payload)).encode()
                + b"\r\nconnection: close\r\n\r\n"
                + payload
            )
            await writer.drain()
            writer.close()
            return
        chat = path.endswith("/chat/completions")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        await writer.drain()
        if self.hold_until:
            await asyncio.wait_for(self.all_arrived.wait(), timeout=60)
        await asyncio.sleep(self.ttft_s)
        tokens = int(body.get("max_tokens", 1))
        for i in range(tokens):
            if i:
                await asyncio.sleep(self.itl_s)
            piece = f" t{i}"
            choice = {"index": 0, "delta": {"content": piece}} if chat else {"index": 0, "text": piece}
            writer.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
            await writer.drain()
        text = body["messages"][-1]["content"] if chat else body.get("prompt", "")
        usage = {"prompt_tokens": len(text.split()), "completion_tokens": tokens}
        writer.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
        await writer.drain()
        writer.close()

    def __enter__(self) -> "StandIn":
        self._thread.start()

        async def start():
            self.all_arrived = asyncio.Event()
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            return server

        self.server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(timeout=30)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
