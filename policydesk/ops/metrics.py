"""Operator signals in Prometheus text format (served at /metrics).

Under `policydesk serve` every worker writes its samples to files in PROMETHEUS_MULTIPROC_DIR
(`serve` sets it, under the data dir, before any worker imports prometheus_client), and a scrape
sums them all, whichever worker answers it. Without that variable (tests, the CLI) the samples
live in this process's REGISTRY.
"""

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

# Decided by prometheus_client when it was first imported, from the environment at that moment.
MULTIPROCESS = values.ValueClass is not values.MutexValue

REGISTRY = CollectorRegistry()
DEGRADED_ANSWERS = Counter("policydesk_degraded_answers", "Answers retrieved on the full-text fallback.", registry=REGISTRY)
INTENT_CLASSIFIER_FAILURES = Counter(
    "policydesk_intent_classifier_failures",
    "Questions the refusal gate screened with its rules only because the intent classifier failed on them.",
    registry=REGISTRY)
FAIL_CLOSED = Counter("policydesk_fail_closed_answers", "Answers withheld after invalid model output or provider failure.", registry=REGISTRY)
REFUSALS = Counter("policydesk_refusals", "Requests refused, by reason.", ["reason"], registry=REGISTRY)
LEAK_TEST_FAILURES = Counter("policydesk_leak_test_failures", "Leak checks that found a chunk above clearance.", registry=REGISTRY)
CACHE_WARMUPS = Counter(
    "policydesk_cache_warmups", "Warm-ups of the dense index into Postgres's cache at start, by outcome: read (this "
    "worker read it), waited (another did), skipped (no index, or one larger than the cache), failed.",
    ["outcome"], registry=REGISTRY)
CLEARANCE_GUARD_DROPS = Counter(
    "policydesk_clearance_guard_drops",
    "Nodes the clearance guard dropped before version resolution or the prompt: a component returned a chunk the "
    "caller may not read (a leak attempt), by component and reason.",
    ["component", "reason"], registry=REGISTRY)
# Stage timings of each ask (the trace's stage_ms): milliseconds to seconds.
STAGE_SECONDS = Histogram(
    "policydesk_stage_seconds", "Time spent in each pipeline stage of an ask, by stage.", ["stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0), registry=REGISTRY)
HTTP_REQUEST_SECONDS = Histogram(
    "policydesk_http_request_seconds", "HTTP request latency, by method, route template and status.",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0), registry=REGISTRY)


def observe_stages(stage_ms: dict[str, float]) -> None:
    for stage, ms in stage_ms.items():
        STAGE_SECONDS.labels(stage=stage).observe(ms / 1000)


def exposition() -> bytes:
    """The scrape: every worker's samples under `serve`, this process's otherwise."""
    if not MULTIPROCESS:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return generate_latest(registry)

