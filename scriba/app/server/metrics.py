"""GET /metrics in Prometheus' text format (prometheus_client): requests by path and status,
latency histograms, and from the shared engine loops: queue depth, running sequences, KV blocks
used and free, tokens generated (its rate is tokens/s); model loads, unloads and resident bytes;
the C heap in use, kept free, mapped."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from scriba.engine.host_heap import heap_bytes


class EngineCollector:
    def collect(self):
        from scriba.runtime.loops import stats

        loops = stats()
        gauges = {
            "scriba_queue_depth": ("requests queued or running", "pending"),
            "scriba_running_sequences": ("sequences in the running batch", "running_sequences"),
            "scriba_kv_blocks_used": ("KV cache blocks in use", "kv_blocks_used"),
            "scriba_kv_blocks_free": ("KV cache blocks free", "kv_blocks_free"),
        }
        for name, (doc, field) in gauges.items():
            family = GaugeMetricFamily(name, doc, labels=["model"])
            for loop in loops:
                family.add_metric([str(loop.model)], getattr(loop, field))
            yield family
        tokens = CounterMetricFamily("scriba_generated_tokens", "tokens generated", labels=["model"])
        for loop in loops:
            tokens.add_metric([str(loop.model)], loop.generated_tokens)
        yield tokens
        yield from _residency()
        heap = heap_bytes()
        if heap is not None:
            family = GaugeMetricFamily("scriba_host_heap_bytes", "the process' C heap", labels=["kind"])
            for kind, value in heap.items():
                family.add_metric([kind], value)
            yield family


def _residency():
    """Loads and unloads per model since the process began, and each loaded model's bytes (the
    process' resident growth while it loaded)."""
    from scriba.runtime.loops import LOADS, UNLOADS, resident

    for name, doc, counts in (("scriba_model_loads", "engines loaded", LOADS),
                              ("scriba_model_unloads", "engines unloaded", UNLOADS)):
        family = CounterMetricFamily(name, doc, labels=["model"])
        for model, count in list(counts.items()):
            family.add_metric([str(model)], count)
        yield family
    family = GaugeMetricFamily("scriba_model_resident_bytes", "bytes a loaded model added", labels=["model"])
    for r in resident():
        family.add_metric([str(r.model)], r.grown_bytes)
    yield family


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "scriba_requests", "HTTP requests by path and status", ["path", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "scriba_request_seconds",
            "request latency",
            ["path"],
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
            registry=self.registry,
        )
        self.registry.register(EngineCollector())

    def middleware(self, app):
        """Plain ASGI (BaseHTTPMiddleware would hide a client's hang-up from the endpoints)."""

        async def record(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            start, status = time.perf_counter(), [500]

            async def sending(message):
                if message["type"] == "http.response.start":
                    status[0] = message["status"]
                await send(message)

            try:
                await app(scope, receive, sending)
            finally:
                self.requests.labels(scope["path"], str(status[0])).inc()
                self.latency.labels(scope["path"]).observe(time.perf_counter() - start)

        return record

    def render(self) -> bytes:
        return generate_latest(self.registry)
