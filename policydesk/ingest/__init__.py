"""Ingestion: manifest validation, format readers, sections, token-bounded chunks, PHI screening,
one-transaction ingest, staleness check, sync (each leaving an audit row with what it refused),
and the sources overview the admin page reads (`overview`)."""

from policydesk.ingest.errors import IngestError, IngestRefused
from policydesk.ingest.ingest import IngestReport, ingest_directory, plan_directory
from policydesk.ingest.staleness import StaleSource, check_staleness

__all__ = [
    "IngestError", "IngestRefused", "IngestReport", "ingest_directory", "plan_directory",
    "StaleSource", "check_staleness",
]
