"""Cited JSON answers: schema, prompt, the synthesizer with validation, and the post-flight check.

The answerers themselves (Gemini, the offline extractive one) are providers: `policydesk.providers`.
"""

from policydesk.synthesis.postflight import PostflightVerdict, check_draft, combine
from policydesk.synthesis.prompt import SYSTEM_PROMPT, build_messages, render_user_turn
from policydesk.synthesis.schema import ModelAnswer
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer, SynthesisOutcome

__all__ = [
    "SYSTEM_PROMPT",
    "CitedAnswerSynthesizer",
    "ModelAnswer",
    "PostflightVerdict",
    "SynthesisOutcome",
    "build_messages",
    "check_draft",
    "combine",
    "render_user_turn",
]
