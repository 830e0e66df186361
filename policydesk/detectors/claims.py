"""Claim language: requests for a claim action, and drafted text announcing a claim decision.

Pure text detection: the refusal gate screens questions with `is_claim_action`, and
the post-flight check screens a draft's own words with `find_claim_decision_language`.

Borderline decisions (pinned in tests/data/refusal_cases.yaml and the labelled splits):
questions about how a rule works pass even when they use claim-action verbs ("how are
claims priced for out-of-network providers?", "can a claim be denied for late filing?",
"can the denial be overturned on appeal?"). A claim action is a request addressed to
PolicyDesk (imperative, "please ...", "can you ...", "I need the denial reversed"), or a
decision asked about one specific case: a possessive or demonstrative ("should this claim be
denied?", "could her PT extension be approved?") or a time the rep wants it done by ("can the
denial on the genetic test be lifted today?"). A request someone else made, reported or
quoted ("the member asked me to just approve it; what do I tell her?"), is a question about
it unless the rep also asks PolicyDesk to do it (`policydesk.detectors.phrasing`).

Beside the patterns below, a request is recognized by its shape whatever the verb
(`policydesk.detectors.actions`: request frame + transactional verb + one case's object, or a
sentence-initial imperative with a case object); its spans go through the same reported-speech check.
"""

from __future__ import annotations

import re

from policydesk.detectors.scope import writes_or_translates_off_topic
from policydesk.detectors.actions import ACTION_WORD, PARTICIPLES, case_action_spans
from policydesk.detectors.phrasing import (
    OWN_REQUEST, SPECIFIC, URGENT, normalize_typos, opens_with_wh, outside, remainder, reported_spans,
)

_I = re.IGNORECASE

_ACT_VERB = (
    r"(?:approve|deny|pay|price|re-?price|adjudicate|re-?adjudicate|override|overturn|"
    r"reprocess|re-?process|reverse|void|mark|fix|correct)"
)
# A request addressed to PolicyDesk: start of a clause, "please", "can you", ...
_REQUEST = (
    r"(?:(?:^|[.!?;]\s*)(?:(?:ok(?:ay)?|so|hey|hi|well|alright|also|now|then|and)[\s,]+)*|,\s*(?:and\s+|then\s+|so\s+)?"
    r"|\b(?:please|pls|plz|kindly|just)\s+"
    r"|\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|also\s+|just\s+)*(?:go\s+ahead\s+and\s+)?"
    r"(?:help\s+(?:me|us)\s+(?:to\s+)?)?"
    r"|(?:^|\b(?:i|we)(?:\s+|(?=')))(?:(?:'m|'re|am|are)\s+)?(?:going\s+to\s+|gonna\s+|'ll\s+|will\s+)?"
    r"(?:need|want|would\s+like|'d\s+like|am\s+asking|'m\s+asking)\s+(?:you|u)\s+to\s+"
    r"|\b(?:i|we)\s+(?:was|were|am|are|'m|'re)\s+(?:hoping|wondering\s+if)\s+(?:you|u)\s+(?:could|can|would|will)\s+"
    r"|\b(?:you|u)\s+(?:need|have)\s+to\s+|\bgo\s+ahead\s+(?:and|n|&)\s+|\blet'?s\s+(?:go\s+ahead\s+and\s+)?"
    # polite and indirect openers: "is there any way you can", "would you be able to", "would the team
    # be able to", "is it ok if you", "any chance you could", "(do you) mind", "do me a favor and",
    # "I'd appreciate it if you could"
    r"|\b(?:is\s+there\s+(?:any|a)\s+way|any\s+way|any\s+chance)\s+(?:you|u|we)\s+(?:can|could)\s+(?:just\s+)?"
    r"|\b(?:would|could|will|can)\s+(?:you|u|you\s+guys|y'?all|your\s+team|the\s+team|someone|somebody|anyone)\s+"
    r"(?:be\s+able|be\s+willing|mind|have\s+time)\s+(?:to\s+)?"
    r"|(?:^|[.!?;,]\s*)(?:do\s+you\s+)?mind\s+"
    r"|\b(?:is|would)\s+it\s+(?:be\s+)?(?:ok(?:ay)?|alright|all\s+right|possible)\s+"
    r"(?:if\s+(?:you|u|we)\s+|for\s+(?:you|u)\s+to\s+|to\s+)"
    r"|\bdo\s+me\s+a\s+favou?r\s+and\s+"
    r"|\bi(?:'d|\s+would)\s+(?:really\s+)?(?:appreciate\s+it|love\s+it|like\s+it|be\s+(?:grateful|thankful|happy))\s+"
    r"if\s+(?:you|u)\s+"
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
# copay", "approve her for the specialty drug"): claim-only objects miss most requests worded
# by people who did not write the rules.
_BROAD_VERB = (
    r"(?:approv(?:e|ing)|deny(?:ing)?|pay(?:ing)?|pric(?:e|ing)|re-?pric(?:e|ing)|re-?adjudicat(?:e|ing)|"
    r"adjudicat(?:e|ing)|overrid(?:e|ing)|overturn(?:ing)?|revers(?:e|ing)|void(?:ing)?|waiv(?:e|ing)|"
    r"releas(?:e|ing)|authori[sz](?:e|ing)|grant(?:ing)?|uphold(?:ing)?|reopen(?:ing)?|reprocess(?:ing)?|"
    r"backdat(?:e|ing)|refund(?:ing)?|reimburs(?:e|ing)|credit(?:ing)?|expedit(?:e|ing)|lift(?:ing)?|"
    r"renew(?:ing)?|extend(?:ing)?|rescind(?:ing)?|reinstat(?:e|ing)|cancel(?:l?ing)?|re-?run(?:ning)?|"
    r"push(?:ing)?\s+through|undo(?:ing)?|sign(?:ing)?\s+off\s+on|adjust(?:ing)?|retro(?:-?dat(?:e|ing))?)"
)
# A definite or counted object: "the copay", "her", "it", "3 extra days", "ten more sessions".
_ANY_DEFINITE = (
    r"(?:(?:the|this|that|these|those|her|him|his|their|them|my|our|it)\b"
    r"|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a\s+few)\s+(?:more|extra|additional)\b"
    r"|(?:another|more|extra)\s+\w+|what(?:'s|\s+is)\s+(?:owed|due))"
)
_DECISION = (
    r"(?:approved|denied|paid|priced|re-?priced|adjudicated|overturned|overridden|"
    r"reprocessed|reversed|voided|payable|upheld)"
)
# What a staff member wants done to a case, as a participle ("I need the denial reversed", "I want
# the refund sent", "the overpayment written off").
_WANTED = (
    r"(?:approved|denied|paid(?:\s+out)?|priced|re-?priced|adjudicated|re-?adjudicated|overturned|"
    r"overridden|reprocessed|reversed|voided|released|waived|lifted|expedited|authori[sz]ed|rescinded|"
    r"reinstated|renewed|extended|backdated|refunded|reimbursed|credited|pushed\s+through|put\s+through|"
    r"sent|issued|cut|mailed|processed|cleared|reopened|removed|dropped|granted|honou?red|decided|changed|"
    r"updated|corrected|fixed|adjusted|entered|excused|forgiven|overlooked|written\s+off|zeroed(?:\s+out)?|"
    r"(?:flipped|switched|bumped|set|marked|moved)\s+(?:to|as)\s+(?:approved|paid|payable|covered)|"
    rf"{PARTICIPLES})"
)
_WANTED_OBJECT = (
    r"(?:(?:the|this|that|these|those|her|his|their|my|our|it)\b(?:\s+[\w'-]+){0,5}?"
    r"|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:more\s+|extra\s+)?(?:[\w'-]+\s+){0,3}?)"
)
_CLAIM_ACTION_PATTERNS = tuple(re.compile(p, _I) for p in (
    # "approve this claim", "can you deny the claim", "please pay claim", "override the denial"
    rf"{_REQUEST}(?:please\s+)?{_ACT_VERB}(?:\s+(?:out|back))?\s+{_CLAIM_OBJECT}",
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
    # "can you enter one and approve it", "could you reopen the appeal and then pay the claim"
    rf"\b(?:can|could|would|will)\s+(?:you|u)\b[^.?!]{{0,40}}?\b(?:and|then)\s+(?:then\s+)?{_ACT_VERB}\s+{_CLAIM_OBJECT}",
    # "set the claim to paid", "flip it to paid", "change her auth to approved"
    rf"{_REQUEST}(?:please\s+)?(?:mark|set|flip|switch|change|move|bump)\s+(?:the|this|that|her|his|their|it)\b"
    rf"(?:\s+[\w'-]+){{0,5}}?\s+(?:to|as)\s+{_DECISION}\b",
    # "the provider sent the records. Go ahead and pay."
    rf"(?:^|[.!?;]\s*|\b(?:please|just|so)\s+)go\s+ahead\s+(?:and|n|&)\s+{_BROAD_VERB}\s*(?:[.!]|$)",
    # "can you make sure the claim for the delivery gets paid this week"
    rf"{_REQUEST}(?:please\s+)?(?:make\s+sure|see\s+(?:to\s+it\s+)?that|ensure(?:\s+that)?)\s+"
    rf"(?:the|this|that|her|his|their)\s+(?:[\w'-]+\s+){{0,5}}?(?:gets?|is|are)\s+{_WANTED}\b",
    # "send the provider a check", "put through the payment for ..."
    rf"{_REQUEST}(?:please\s+)?send\s+(?:the|her|him|them|this|that)\s+(?:[\w'-]+\s+)?(?:a\s+)?(?:check|payment|refund)\b",
    rf"{_REQUEST}(?:please\s+)?put\s+through\s+(?:the|this|that|her|his)\s+(?:[\w'-]+\s+){{0,2}}?"
    rf"(?:payment|claim|refund|reimbursement|auth\w*|appeal|exception|override)\b",
    # "we should refund the member's copay", "so we need to pay this one"
    rf"(?:^|[.!?;,]\s*)(?:so\s+|ok(?:ay)?\s+|then\s+)?we\s+(?:should|need\s+to|have\s+to|must|gotta|ought\s+to)\s+"
    rf"(?:just\s+)?{_BROAD_VERB}\s+{_ANY_DEFINITE}",
    # "you can approve it, right?"
    rf"(?:^|[.!?;,]\s*)(?:so\s+|but\s+|and\s+)?(?:you|u)\s+(?:can|could|should|will)\s+(?:just\s+)?"
    rf"{_BROAD_VERB}\s+{_ANY_DEFINITE}",
    # a bare imperative that is the whole sentence: "Approve please.", "Pay them.", "Just reprocess."
    r"(?:^|[.!?;:]\s*)(?:please\s+|just\s+|pls\s+)?(?:approve|deny|pay|waive|reprocess|authori[sz]e|release|overturn|"
    r"reverse|refund|reimburse|expedite|backdate|override)(?:\s+(?:it|this|that|them|this\s+one))?"
    r"(?:,?\s+(?:please|pls|now|asap|today|already))*\s*[.!]*\s*$",
    # "get the formulary exception through", "run the claim through again"
    rf"{_REQUEST}(?:please\s+)?(?:get|run)\s+{_WANTED_OBJECT}\s*through\b",
    # "decide the appeal in the member's favor"
    rf"{_REQUEST}(?:please\s+)?decide\s+(?:the|this|that|her|his|their)\s+(?:[\w'-]+\s+){{0,4}}?in\s+(?:the\s+)?"
    rf"[\w'-]+\s+favou?r\b",
    # "let this one slide", "just let it through", "wave it through"
    rf"{_REQUEST}(?:just\s+)?(?:let|wave|slide)\s+(?:it|this|that|them|these|those|her|him|the(?:\s+[\w'-]+){{1,3}}?)"
    rf"(?:\s+one)?\s+(?:slide|through|go\s+through|pass)\b",
    # "make an exception (on the filing limit) just this once", "could you grant a one-time exception"
    r"(?:^|[.!?;,]\s*|\b(?:please|just|so)\s+|\b(?:can|could|would|will)\s+(?:you|u|we)\s+(?:please\s+|just\s+)*)"
    r"(?:make|grant)\s+(?:an?\s+|one\s+)?(?:one[-\s]time\s+|small\s+|quick\s+|little\s+)?exception\b",
    # "take the hold off the claim", "clear the pend", "stop the recoupment", "undo the bundling denial"
    rf"{_REQUEST}(?:please\s+)?(?:clear|remove|lift|undo|stop|drop|cancel|take)\s+(?:off\s+)?"
    rf"(?:the|this|that|her|his|their)\s+(?:[\w'.-]+\s+){{0,3}}?"
    rf"(?:hold|pend|edit|denial|recoupment|offset|recovery|flag|block|suspension)s?\b",
    # "go ahead with the reimbursement", "proceed with the refund"
    r"(?:^|[.!?;,]\s*|\b(?:please|pls|just|so)\s+)(?:go\s+ahead|proceed)\s+with\s+(?:the|this|that|her|his|their)\s+"
    r"(?:[\w'-]+\s+){0,2}?(?:reimbursement|payment|refund|approval|override|exception|adjustment|reversal|"
    r"claim|appeal|auth\w*|write[-\s]?off)\b",
    # "would the team be able to release payment", "please issue payment", "can you cut a check"
    rf"{_REQUEST}(?:please\s+)?(?:release|issue|send|cut|process)\s+(?:a\s+|the\s+)?(?:payment|funds|checks?|refund|"
    rf"reimbursement)\b",
    # "I'm requesting that the appeal for the CT scan be approved"
    rf"\b(?:i'?m|i\s+am|we'?re|we\s+are|i|we)\s+(?:formally\s+|now\s+)?(?:requesting|asking|request|ask)\s+(?:that\s+)?"
    rf"(?:the|this|that|her|his|their|my|our)\s+(?:[\w'-]+\s+){{0,6}}?(?:be|get)\s+{_WANTED}\b",
))
# Wanting a specific case acted on, with no imperative: "I need the denial reversed", "can we get this
# paid today", "can you help me get her appeal approved", "need 6 more visits approved". Not when the
# question opens with a wh-word, and not "does the member need the referral approved?" (third person).
_WANTED_PATTERNS = tuple(re.compile(p, _I) for p in (
    rf"(?:^|[.!?;,]\s*|(?<!\bdo\s)(?<!\bdid\s)(?<!\bwill\s)(?<!\bwould\s)(?<!\bshould\s)(?<!\bshall\s)(?<!\bcan\s)"
    rf"\b(?:i|we)(?:\s+|(?='))|\b(?:just|really|still|also|so)\s+)(?:need|want|'d\s+like|would\s+like)\s+"
    rf"{_WANTED_OBJECT}\s*{_WANTED}\b",
    rf"\b(?:can|could|will|would)\s+(?:we|you|u|i)\s+(?:please\s+|just\s+|also\s+)*(?:help\s+(?:me|us)\s+)?"
    rf"(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
    rf"(?:^|[.!?;]\s*|\b(?:please|pls|just|let'?s)\s+)(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
    rf"\b(?:any\s+way|any\s+chance)\s+(?:you|u|we)\s+(?:can|could)\s+(?:please\s+|just\s+)*(?:get|have)\s+"
    rf"{_WANTED_OBJECT}\s*{_WANTED}\b",
    # "would you mind pushing the auth through", "please put the claim through"
    rf"{_REQUEST}(?:please\s+)?(?:push(?:ing)?|put(?:ting)?|send(?:ing)?)\s+{_WANTED_OBJECT}\s*through\b",
    rf"\b(?:is\s+there\s+(?:any|a)\s+way|any\s+way|any\s+chance|(?:is|would)\s+it\s+(?:be\s+)?possible)\s+"
    rf"(?:to|we\s+can|you\s+can|"
    rf"we\s+could|you\s+could)\s+(?:get|have)\s+{_WANTED_OBJECT}\s*{_WANTED}\b",
))
# One specific case asked to be acted on, with no request opener: a modal passive ("could her PT
# extension be approved before Tuesday?", "can the denial on the genetic test be lifted today?"),
# "can we + verb + a definite object" ("can we extend her auth another 30 days?"), a specific case
# that "should be / needs" something done ("her exception needs approving today"), a favour "this one
# time". Specific means a possessive or demonstrative in the subject, or a time the rep wants it done
# by; "can a claim be approved if ...?" and "can the denial be overturned on appeal?" ask the rule.
_SPECIFIC_DET = r"(?:this|that|these|those|her|his|their|my|our|the\s+[\w-]+'s?)"
_GENERIC = re.compile(
    r"\b(?:ever|in\s+general|generally|usually|typically|normally|always|routinely|any\s+time|"
    r"(?:if|when|unless|once|in\s+case)\s+(?:a|an|any|the|she|he|they|her|his|their|it)\b|for\s+(?:any\s+|all\s+)?"
    r"(?:members|providers|claims|patients|people)|under\s+(?:what|which)|or\s+(?:does|do|is|are|must|should|would|"
    r"can|has|have)\b)", _I)
# (pattern, needs a specific subject or a time): "can we" and "this one time" carry their own specificity
_SPECIFIC_CASE_PATTERNS: tuple[tuple[re.Pattern[str], bool], ...] = tuple((re.compile(p, _I), needs) for p, needs in (
    # "could the auth for her MRI be backdated to last Monday?"
    (rf"\b(?:can|could|would|will|should|may)\s+(?P<np>(?:the|{_SPECIFIC_DET})\s+(?:[\w'./-]+\s+){{0,6}}?)"
     rf"(?:still\s+|just\s+|please\s+)?(?:be|get)\s+(?:\w+ly\s+)?{_WANTED}\b", True),
    # "any chance the provider's late claim can still be paid"
    (rf"\b(?:any|a)\s+(?:chance|way|possibility)\s+(?:that\s+)?(?P<np>(?:the|{_SPECIFIC_DET})\s+(?:[\w'./-]+\s+){{0,6}}?)"
     rf"(?:can|could|will|would|might)\s+(?:still\s+|just\s+)?(?:be|get)\s+{_WANTED}\b", True),
    # "can we extend her auth another 30 days", "could we reprocess his ER claim"
    (rf"\b(?:can|could|should|shall|may)\s+we\s+(?:please\s+|just\s+|still\s+|go\s+ahead\s+and\s+)*"
     rf"(?P<np>){_BROAD_VERB}\s+{_ANY_DEFINITE}", False),
    # "the refund should be sent to her, please", "his claim has to be reprocessed today"
    (rf"(?:^|[.!?;,]\s*|\b(?:and|so|but)\s+)(?P<np>(?:the|{_SPECIFIC_DET})\s+(?:[\w'./-]+\s+){{0,6}}?)"
     rf"(?:should|must|needs?\s+to|has\s+to|ought\s+to)\s+(?:be|get)\s+(?:\w+ly\s+)?{_WANTED}\b", True),
    # "her exception needs approving today"
    (rf"(?:^|[.!?;,]\s*|\b(?:and|so|but)\s+)(?P<np>{_SPECIFIC_DET}\s+(?:[\w'./-]+\s+){{0,6}}?)needs?\s+"
     rf"(?:approving|paying|reprocessing|reversing|overturning|releasing|refunding|reimbursing|processing|extending|"
     rf"backdating|fixing|correcting)\b", True),
    # "is there any way her hospital stay can be covered in full this time?", "could the late filing be excused
    # this one time?"
    (r"\b(?:can|could|would|will|may)\s+(?P<np>)(?:[\w'./-]+\s+){0,8}?(?:be|get)\s+(?:covered|allowed|accepted|excused|"
     r"forgiven|overlooked|paid|approved|waived)\b[^.?!]{0,30}?(?:this\s+(?:one\s+)?time|just\s+this\s+once|this\s+once|"
     r"as\s+an?\s+(?:one[-\s]time\s+)?(?:exception|courtesy|favou?r))\b", False),
    # "can I get an override so the pharmacy can fill her insulin early?"
    (r"\b(?:can|could|may)\s+(?:i|we)\s+(?:please\s+|just\s+)?(?:get|have)\s+(?P<np>)(?:an?\s+|the\s+|that\s+|this\s+)?"
     r"(?:one[-\s]time\s+)?(?:override|exception|approval|authori[sz]ation|extension|refund|reimbursement|waiver|"
     r"retro\s+auth)\b(?!\s+(?:form|request\s+form|letter|number|status|list|process|policy))", False),
    # "can the plan just cover her ER bill this one time?"
    (rf"(?:\b(?:can|could|would|will)\s+(?:the\s+plan|we|you|u)\s+|{_REQUEST})(?:just\s+|please\s+|still\s+)*(?P<np>)"
     rf"(?:cover|pay(?:\s+for)?|approve|accept|waive|honou?r|reimburse|allow)\s+(?:[\w'-]+\s+){{0,5}}?"
     rf"(?:this\s+(?:one\s+)?time|just\s+this\s+once|this\s+once|as\s+a\s+(?:one[-\s]time\s+)?"
     rf"(?:exception|courtesy|favou?r))\b", False),
))


# "extend the timeframe on a drug decision": the object is the rule's clock for any case, not a case.
_RULE_OF_ANY_CASE = re.compile(r"\s*(?:time\s*frames?|deadlines?|limits?|windows?|clocks?|timelines?)\s+(?:on|for|of)\s+"
                               r"(?:a|an|any)\b", _I)


def _specific_case(question: str) -> list[tuple[int, int]]:
    if _GENERIC.search(question):
        return []
    return [m.span() for pattern, needs_specific in _SPECIFIC_CASE_PATTERNS for m in pattern.finditer(question)
            if (not needs_specific or SPECIFIC.search(m.group("np")) or URGENT.search(question))
            and not _RULE_OF_ANY_CASE.match(question, m.end())]


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
    r"exception|cover|renew\w*|rescind\w*|reinstat\w*|extend\w*|let|slide|clear|undo|stop|take)\b", _I)


def mentions_action(question: str) -> bool:
    """Any verb a claim action could be asked with: a necessary condition for the learned detector."""
    question = normalize_typos(question)
    return bool(_ACTION_WORD.search(question) or ACTION_WORD.search(question))


# A last clause of a few words after a comma, colon or dash, with no verb a request could use
# ("part B drug request, turnaround?", "non par provider - initial claim TFL?"): it names what is
# asked, as a heading would. A tag ("..., ok?", "..., right?") asks nothing of its own.
_LAST_FRAGMENT = re.compile(r"(?:[,:;]|\s[-\u2013\u2014])\s*([^,:;.?!\s][^,:;.?!]{0,40}?)\s*\?\s*$")
_TAG = re.compile(r"^(?:ok(?:ay)?|right|yes|no|correct|please|pls|thanks|asap|now|today|then|too|either)$", _I)
FRAGMENT_WORDS = 3


def names_what_is_asked(question: str) -> bool:
    """The question ends by naming what it asks for, in a verbless fragment."""
    m = _LAST_FRAGMENT.search(question.strip())
    if not m:
        return False
    fragment = m.group(1)
    return (len(fragment.split()) <= FRAGMENT_WORDS and not _TAG.match(fragment) and not mentions_action(fragment)
            and not SPECIFIC.search(fragment) and not URGENT.search(question))


def _claim_action_spans(question: str) -> list[tuple[int, int]]:
    spans = [m.span() for p in _CLAIM_ACTION_PATTERNS for m in p.finditer(question)]
    spans += case_action_spans(question)
    if not opens_with_wh(question):
        spans += [m.span() for p in _WANTED_PATTERNS for m in p.finditer(question)]
        spans += _specific_case(question)
    return spans


def is_claim_action(question: str) -> bool:
    """A request to act on a claim (approve, deny, pay, ...), not a question about the rule, and not
    a request someone else made that the rep asks about."""
    question = normalize_typos(question)
    if writes_or_translates_off_topic(question):
        return False  # "translate 'your claim has been denied' into Japanese": the claim words are quoted
    spans = _claim_action_spans(question)
    if not spans:
        return False
    reported = reported_spans(question)
    if any(outside(span, reported) for span in spans):
        return True
    return bool(OWN_REQUEST.search(remainder(question, reported)))
