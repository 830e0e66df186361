"""Ingestion: manifest validation, section readers, one-transaction ingest, staleness check."""

from policydesk.ingest.errors import IngestError
from policydesk.ingest.ingest import IngestReport, ingest_directory
from policydesk.ingest.staleness import StaleSource, check_staleness

__all__ = ["IngestError", "IngestReport", "ingest_directory", "StaleSource", "check_staleness"]
