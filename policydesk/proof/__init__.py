"""Proof of what was said: the trace row each request writes (assembled by the pipeline from what
its steps returned; the instrumentation here only observes LlamaIndex, for OpenTelemetry spans and
the evals' watch on model calls), citations built from stored rows and shown again under
today's clearance, feedback, exports that verify offline, and the disputes service (search,
check against the member's date, replay).

Imports `contract`, `storage`, `versions`, `screening` and `accounts`; the disputes replay calls
the pipeline it is handed.
"""
