"""Claim language: requests for a claim action, and drafted text announcing a claim decision.

Pure text detection: the refusal gate screens questions with `is_claim_action`, and
the post-flight check and the extractive answerer screen drafted text with
`find_claim_decision_language`.

Borderline decisions (pinned in tests/data/refusal_cases.yaml): questions about how
a rule works pass even when they use claim-action verbs ("how are claims priced for
out-of-network providers?", "when does the plan pay secondary claims?", "can a claim
be denied for late filing?"). Only a request addressed to PolicyDesk (imperative,
"please ...", "can you ...") or a decision asked about one specific claim ("should
this claim be denied?") is a claim action.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_ACT_VERB = (
    r"(?:approve|deny|pay|price|re-?price|adjudicate|re-?adjudicate|override|overturn|"
    r"reprocess|re-?process|reverse|void|mark)"
)
# A request addressed to PolicyDesk: start of a clause, "please", "can you", ...
_REQUEST = (
    r"(?:^|[.!?;]\s*|,\s*(?:and\s+|then\s+|so\s+)?|\b(?:please|pls|plz|kindly|just)\s+"
    r"|\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|also\s+|just\s+)*(?:go\s+ahead\s+and\s+)?"
    r"|\bi\s+(?:need|want|would\s+like|'d\s+like|am\s+asking|'m\s+asking)\s+(?:you|u)\s+to\s+"
    r"|\b(?:you|u)\s+(?:need|have)\s+to\s+|\bgo\s+ahead\s+and\s+|\blet'?s\s+(?:go\s+ahead\s+and\s+)?"
    # polite and indirect openers: "is there any way you can", "would you be able to",
    # "is it ok if you", "any chance you could", "do me a favor and", "I'd appreciate it if you could"
    r"|\b(?:is\s+there\s+(?:any|a)\s+way|any\s+chance)\s+(?:you|u|we)\s+(?:can|could)\s+(?:just\s+)?"
    r"|\b(?:would|could|will)\s+(?:you|u)\s+(?:be\s+able|be\s+willing|mind|have\s+time)\s+(?:to\s+)?"
    r"|\bis\s+it\s+(?:ok(?:ay)?|alright|all\s+right|possible)\s+(?:if\s+(?:you|u|we)\s+|for\s+(?:you|u)\s+to\s+|to\s+)"
    r"|\bdo\s+me\s+a\s+favou?r\s+and\s+"
    r"|\bi(?:'d|\s+would)\s+(?:really\s+)?(?:appreciate\s+it|be\s+(?:grateful|thankful))\s+if\s+(?:you|u)\s+"
    r"(?:could|would|can)\s+)"
)
_DEICTIC = r"(?:this|that|these|those|my|his|her|their|our|the\s+member'?s)"
# The object of a request: a definite claim ("the claim", "this denied claim"),
# a bare singular "claim" ("please pay claim"), or "it". An indefinite or generic
# object ("can you deny a claim for ...", "pay parity for telehealth claims") is
# a question about the rule and passes.
_CLAIM_OBJECT = (
    r"(?:(?:the|your|{d})\s+(?:[\w'-]+\s+){{0,2}}?(?:claims?|denial|payment)\b"
    r"|claim\b|it\b|them\b)"
).format(d=_DEICTIC)
# A request addressed to PolicyDesk with a definite object of any kind ("could you waive the
# copay", "approve her for the specialty drug"): issue 15 found the claim-only objects missed
# most requests written outside the project.
_BROAD_VERB = (
    r"(?:approv(?:e|ing)|deny(?:ing)?|pay(?:ing)?|pric(?:e|ing)|re-?pric(?:e|ing)|re-?adjudicat(?:e|ing)|"
    r"adjudicat(?:e|ing)|overrid(?:e|ing)|overturn(?:ing)?|revers(?:e|ing)|void(?:ing)?|waiv(?:e|ing)|"
    r"releas(?:e|ing)|authori[sz](?:e|ing)|grant(?:ing)?|uphold(?:ing)?|reopen(?:ing)?|reprocess(?:ing)?|"
    r"backdat(?:e|ing)|refund(?:ing)?|reimburs(?:e|ing)|credit(?:ing)?|expedit(?:e|ing)|lift(?:ing)?|"
    r"renew(?:ing)?|extend(?:ing)?|rescind(?:ing)?|reinstat(?:e|ing)|cancel(?:l?ing)?|re-?run(?:ning)?|"
    r"push(?:ing)?\s+through)"
)
# A definite or counted object: "the copay", "her", "it", "3 extra days", "ten more sessions".
_ANY_DEFINITE = (
    r"(?:(?:the|this|that|these|those|her|him|his|their|them|my|our|it)\b"
    r"|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a\s+few)\s+(?:more|extra|additional)\b"
    r"|(?:another|more|extra)\s+\w+)"
)
_DECISION = (
    r"(?:approved|denied|paid|priced|re-?priced|adjudicated|overturned|overridden|"
    r"reprocessed|reversed|voided|payable)"
)
# What a staff member wants done to a case, as a participle ("I need the denial reversed").
_WANTED = (
    r"(?:approved|denied|paid(?:\s+out)?|priced|re-?priced|adjudicated|re-?adjudicated|overturned|"
    r"overridden|reprocessed|reversed|voided|released|waived|lifted|expedited|authori[sz]ed|rescinded|"
    r"reinstated|renewed|extended|backdated|refunded|reimbursed|credited|pushed\s+through)"
)
# A question that opens with a wh-word asks about the rule ("what does it take to get the auth approved?").
_WH_OPEN = re.compile(
    r"^\W*(?:(?:hi|hey|hello|sorry|ok(?:ay)?|so|quick\s+question|question)[\s,!:.-]+)*"
    r"(?:how|what|what's|whats|when|where|which|who|whose|why)\b", _I)
_CLAIM_ACTION_PATTERNS = tuple(re.compile(p, _I) for p in (
    # "approve this claim", "can you deny the claim", "please pay claim", "override the denial"
    rf"{_REQUEST}(?:please\s+)?{_ACT_VERB}\s+{_CLAIM_OBJECT}",
    # "could you waive the copay", "please approve her for the drug", "go ahead and release the hold"
    rf"{_REQUEST}(?:please\s+)?(?:go\s+in\s+and\s+)?{_BROAD_VERB}\s+{_ANY_DEFINITE}",
    # "mark the claim as paid"
    rf"\bmark\s+(?:the|{_DEICTIC})?\s*claims?\s+(?:as\s+)?{_DECISION}\b",
    # "get this claim approved", "I need my claim paid"
    rf"\b(?:get|have|want|need)\s+{_DEICTIC}\s+claims?\s+{_DECISION}\b",
    # "should this claim be denied?", "will that claim get paid?"
    rf"\b(?:should|can|could|will|would|must)\s+{_DEICTIC}\s+claims?\s+"
    rf"(?:be\s+|get\s+){_DECISION}\b",
    # "is this claim payable?"
    rf"\bis\s+{_DEICTIC}\s+claims?\s+payable\b",
    # "this claim should be approved", "my claim needs to be paid"
    rf"\b{_DEICTIC}\s+claims?\s+(?:should|must|needs?\s+to|has\s+to|ought\s+to)\s+"
    rf"(?:be\s+|get\s+){_DECISION}\b",
))
# Wanting a specific case acted on, with no imperative: "I need the denial reversed", "can we get this
# paid today", "can you help me get her appeal approved", "need 6 more visits approved". Not when the
# question opens with a wh-word, and not "does the member need the referral approved?" (third person).
_WANTED_OBJECT = (
    r"(?:(?:the|this|that|these|those|her|his|their|my|our|it)\b(?:\s+[\w'-]+){0,5}?"
    r"|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:more\s+|extra\s+)?(?:[\w'-]+\s+){0,3}?)"
)
_WANTED_PATTERNS = tuple(re.compile(p, _I) for p in (
    rf"(?:^|[.!?;,]\s*|\b(?:i|we|just|really|still|also|so)\s+)(?:need|want|'d\s+like|would\s+like)\s+"
    rf"{_WANTED_OBJECT}\s*{_WANTED}\b",
    rf"\b(?:can|could|will|would)\s+(?:we|you|u|i)\s+(?:please\s+|just\s+|also\s+)*(?:help\s+(?:me|us)\s+)?"
    rf"(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
    rf"(?:^|[.!?;]\s*|\b(?:please|pls|just|let'?s)\s+)(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
    # "would you mind pushing the auth through", "please put the claim through"
    rf"{_REQUEST}(?:please\s+)?(?:push(?:ing)?|put(?:ting)?|send(?:ing)?)\s+{_WANTED_OBJECT}\s*through\b",
    rf"\b(?:is\s+there\s+(?:any|a)\s+way|any\s+chance|is\s+it\s+possible)\s+(?:to|we\s+can|you\s+can|"
    rf"we\s+could|you\s+could)\s+(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
))

_DECISION_LANGUAGE_PATTERNS = tuple(re.compile(p, _I) for p in (
    # "your claim is approved", "the claim will be denied", "this claim will be paid"
    r"\b(?:your|the|this|that|their|his|her|my)\s+claims?\s+(?:is|are|has\s+been|have\s+been|"
    r"was|were|will\s+be|would\s+be|shall\s+be|should\s+be|'s)\s+(?:now\s+)?"
    r"(?:approved|denied|paid|payable|rejected|adjudicated|overturned|reprocessed)\b",
    # "we will pay", "we'll approve"
    r"\bwe(?:\s+will|'ll|\s+are\s+going\s+to|\s+shall)\s+(?:pay|approve|deny|reimburse|"
    r"reprocess|overturn|cover)\b",
    # "we have approved the claim", "I denied your claim"
    r"\b(?:i|we)\s+(?:have\s+|'ve\s+)?(?:approved|denied|paid|adjudicated|overridden|"
    r"overturned|reprocessed)\s+(?:your|the|this|that|their)\s+claims?\b",
    # "is approved for payment"
    r"\b(?:approved|cleared|released)\s+for\s+payment\b",
))


def find_claim_decision_language(text: str) -> list[str]:
    """Phrases in a drafted answer that announce a decision on a claim."""
    found: list[str] = []
    for pattern in _DECISION_LANGUAGE_PATTERNS:
        for m in pattern.finditer(text):
            phrase = " ".join(m.group(0).lower().split())
            if phrase not in found:
                found.append(phrase)
    return found



_ACTION_WORD = re.compile(
    r"\b(?:approv\w*|apporve|den(?:y|ied|ial)|pa(?:y|id|yment|yout)|pric\w*|adjudicat\w*|override|"
    r"overturn|revers\w*|void|waive|release|authori[sz]\w*|grant|uphold|cancel|reopen|reprocess\w*|"
    r"re-?run|process|extend|backdate|issue|refund|reimburse|credit|adjust\w*|write[\s-]+(?:it\s+)?off|mark|set|flip|bump|"
    r"lift|accept|expedite|submit|send|put|push|close|zero|change|add|retro-?\w+|decide|make|give|get|"
    r"exception|cover|renew\w*|rescind\w*|reinstat\w*|extend\w*)\b", _I)


def mentions_action(question: str) -> bool:
    """Any verb a claim action could be asked with: a necessary condition for the learned detector."""
    return bool(_ACTION_WORD.search(question))


def is_claim_action(question: str) -> bool:
    """A request to act on a claim (approve, deny, pay, ...), not a question about the rule."""
    if any(p.search(question) for p in _CLAIM_ACTION_PATTERNS):
        return True
    return not _WH_OPEN.search(question) and any(p.search(question) for p in _WANTED_PATTERNS)
