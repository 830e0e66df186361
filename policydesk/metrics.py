"""Operator signals in Prometheus text format (served at /metrics)."""

from prometheus_client import CollectorRegistry, Counter

REGISTRY = CollectorRegistry()
DEGRADED_ANSWERS = Counter("policydesk_degraded_answers", "Answers retrieved on the full-text fallback.", registry=REGISTRY)
FAIL_CLOSED = Counter("policydesk_fail_closed_answers", "Answers withheld after invalid model output or provider failure.", registry=REGISTRY)
REFUSALS = Counter("policydesk_refusals", "Requests refused, by reason.", ["reason"], registry=REGISTRY)
LEAK_TEST_FAILURES = Counter("policydesk_leak_test_failures", "Leak checks that found a chunk above clearance.", registry=REGISTRY)
CLEARANCE_GUARD_DROPS = Counter(
    "policydesk_clearance_guard_drops",
    "Nodes the clearance guard dropped before version resolution or the prompt: a component returned a chunk the "
    "caller may not read (a leak attempt), by component and reason.",
    ["component", "reason"], registry=REGISTRY)
