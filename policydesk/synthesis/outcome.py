"""What one synthesis produced: the validated answer or the reason there is none, and every attempt."""

from __future__ import annotations

from dataclasses import dataclass, field

from llama_index.core.schema import NodeWithScore

from policydesk.synthesis.schema import ModelAnswer


@dataclass
class SynthesisOutcome:
    answer: ModelAnswer | None
    abstain_reason: str | None
    attempts: list[dict] = field(default_factory=list)  # raw, error, tokens_in, tokens_out
    # What each model call was sent (its messages' text, in order): one per attempt, for the trace's
    # call count and the leak checks; never stored.
    prompts: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""
    # True when the model was asked but no answer survived: provider failure or twice-invalid reply
    # (not when the context was empty or the model itself said the sources do not answer).
    failed_closed: bool = False
    # The nodes the model was shown: those the caller may read, re-read from the store.
    context: list[NodeWithScore] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # ids handed in that the caller may not read (or none)

    @property
    def answered(self) -> bool:
        return self.answer is not None
