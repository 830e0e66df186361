"""Operator signals in Prometheus text format (served at /metrics)."""

from prometheus_client import CollectorRegistry, Counter

REGISTRY = CollectorRegistry()
DEGRADED_ANSWERS = Counter("policydesk_degraded_answers", "Answers retrieved on the full-text fallback.", registry=REGISTRY)
FAIL_CLOSED = Counter("policydesk_fail_closed_answers", "Answers withheld after invalid model output or provider failure.", registry=REGISTRY)
REFUSALS = Counter("policydesk_refusals", "Requests refused, by reason.", ["reason"], registry=REGISTRY)
LEAK_TEST_FAILURES = Counter("policydesk_leak_test_failures", "Leak checks that found a chunk above clearance.", registry=REGISTRY)
