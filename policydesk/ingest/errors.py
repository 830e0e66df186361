class IngestError(ValueError):
    """Bad input to ingest. The message names the file, the field and the reason."""

    def __init__(self, file: str, field: str, reason: str):
        self.file, self.field, self.reason = file, field, reason
        super().__init__(f"{file}: {field}: {reason}")


class IngestRefused(IngestError):
    """Several files were refused; the message lists every one, one line each."""

    def __init__(self, problems: list[IngestError]):
        self.problems = problems
        if len(problems) == 1:
            p = problems[0]
            super().__init__(p.file, p.field, p.reason)
        else:
            ValueError.__init__(self, f"{len(problems)} files refused:\n  " + "\n  ".join(str(p) for p in problems))
            self.file, self.field, self.reason = problems[0].file, problems[0].field, problems[0].reason
