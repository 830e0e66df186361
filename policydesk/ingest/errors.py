class IngestError(ValueError):
    """Bad input to ingest. The message names the file, the field and the reason."""

    def __init__(self, file: str, field: str, reason: str):
        self.file, self.field, self.reason = file, field, reason
        super().__init__(f"{file}: {field}: {reason}")
