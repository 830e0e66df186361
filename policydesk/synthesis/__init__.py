"""Cited JSON answers: schema, prompt, the synthesizer with validation, and the post-flight check.

The models (Gemini, a plan's own OpenAI-compatible server) and the offline passage reader are
providers: `policydesk.providers`.
"""

from policydesk.synthesis.postflight import PostflightVerdict, check_draft, combine
from policydesk.synthesis.prompt import SYSTEM_PROMPT, build_messages, render_user_turn
from policydesk.synthesis.schema import ModelAnswer
from policydesk.synthesis.outcome import SynthesisOutcome
from policydesk.synthesis.response import cited_response
from policydesk.synthesis.synthesizer import PROMPT_KEY, CitedAnswerSynthesizer

__all__ = [
    "PROMPT_KEY",
    "SYSTEM_PROMPT",
    "CitedAnswerSynthesizer",
    "ModelAnswer",
    "PostflightVerdict",
    "SynthesisOutcome",
    "build_messages",
    "check_draft",
    "cited_response",
    "combine",
    "render_user_turn",
]
