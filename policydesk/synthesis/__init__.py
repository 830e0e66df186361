"""Cited JSON answers: schema, prompt, synthesizer with validation, and the answerers.

`policydesk.synthesis.gemini` is imported on demand (it pulls in google-genai).
"""

from policydesk.synthesis.extractive import EXTRACTIVE_MODEL_NAME, ExtractiveAnswerer
from policydesk.synthesis.postflight import PostflightVerdict, check_draft, combine
from policydesk.synthesis.prompt import SYSTEM_PROMPT, build_messages, render_user_turn
from policydesk.synthesis.schema import AnswerWarning, Citation, Claim, ModelAnswer
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer, SynthesisOutcome

__all__ = [
    "EXTRACTIVE_MODEL_NAME",
    "SYSTEM_PROMPT",
    "AnswerWarning",
    "Citation",
    "CitedAnswerSynthesizer",
    "Claim",
    "ExtractiveAnswerer",
    "ModelAnswer",
    "PostflightVerdict",
    "SynthesisOutcome",
    "build_messages",
    "check_draft",
    "combine",
    "render_user_turn",
]
