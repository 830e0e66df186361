"""Proof of what was said: the trace row each request writes (and the instrumentation that
observes LlamaIndex's events for it), citations built from stored rows and shown again under
today's clearance, feedback, exports that verify offline, and the disputes service (search,
check against the member's date, replay).

Imports `contract`, `storage`, `versions`, `screening` and `accounts`; the disputes replay calls
the pipeline it is handed.
"""
