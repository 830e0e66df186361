"""A request to do something to one case, recognized by its shape rather than by a short verb list.

A verb list misses requests whose verb it does not name ("reissue the
check ...", "file the appeal for the member ...", "retro-authorize the admission ..."). A claim action
here is a request addressed to PolicyDesk (imperative mood, or "please / can you / I need you to /
go ahead and / we need to ...") + an action verb + an object that is one case's thing ("the check",
"her PA", "this grievance", "a corrected claim", "it"). Three parts:

- `ACTION_VERBS`: a general inventory of transactional verbs (base forms; "re-", "retro-" and "un-"
  prefixes, particles such as "out", "back", "through" allowed), not a list fitted to cases;
- a case object: a determiner or possessive, a few modifiers, and a case noun (`CASE_NOUNS`: claim,
  appeal, auth, referral, payment, check, refund, grievance, EOB, coverage, ...), a pronoun ("it",
  "this one"), or, after verbs that create something, an indefinite one ("file a grievance");
- an imperative at the start of a sentence with a verb the inventory does not know ("Requeue the
  claim for manual review."): any word that is not a function word, an information verb ("check",
  "explain", "confirm") or inflected, followed by a case object.

What is not a request: a question that opens with a wh-word or an auxiliary ("how do I file the
appeal?", "can a provider file the appeal for the member?" have no request frame), an either/or
question ("Approve or deny: which decision applies ...?", "Apply the deductible first or the copay?"),
an imperative with no request word that ends in "?" ("Apply the deductible first, then coinsurance?"),
and a request someone else made (reported speech, `policydesk.detectors.phrasing`), which
`policydesk.detectors.claims` applies to every claim-action span.
"""

from __future__ import annotations

import re

from policydesk.detectors.phrasing import opens_with_wh

_I = re.IGNORECASE

# Transactional verbs, base forms: what someone asks a claims system (or a person with access to it) to do.
ACTION_VERBS: tuple[str, ...] = tuple(sorted(set("""
    accept activate add adjudicate adjust allow amend apply appeal approve assign authorize authorise
    backdate bill block book bump cancel change clear close code collect comp complete correct cover credit
    cut decide delete deny disenroll dismiss downgrade drop enroll enter escalate exempt expedite extend
    fast-track file finalize fix flag flip forgive free grant hold honor honour issue key lift load lodge mail
    mark merge move negotiate offset open override overturn pay pend place post price process push
    put queue rebill recode reclassify recoup recover reimburse reinstate reject release remove renew
    reopen replace reroute rescind reset resolve restore retract return reverse revoke roll route run
    send set settle sign speed split start stop stretch submit suspend switch terminate term transfer update
    upgrade uphold upload void waive withdraw write zero
    reactivate readjudicate reassign reauthorize reissue rerun resend refile refund reprice reprocess
    resubmit requeue retro retro-auth rush
""".split())))
# Verbs that make something new: they take an indefinite object ("file a grievance", "cut a check").
_CREATE_VERBS = ("do", "file", "refile", "lodge", "submit", "resubmit", "open", "reopen", "issue", "reissue", "cut",
                 "send", "resend", "enter", "start", "add", "put", "place", "key", "load", "request", "book",
                 "upload", "post", "set")
_IRREGULAR_PARTICIPLE = {
    "pay": "paid", "send": "sent", "resend": "resent", "put": "put", "cut": "cut", "set": "set", "reset": "reset",
    "write": "written", "withdraw": "withdrawn", "hold": "held", "uphold": "upheld", "run": "run", "rerun": "rerun",
    "split": "split", "key": "keyed", "retro-auth": "retro-authed", "speed": "sped", "do": "done",
}
# a doubled final consonant ("stopped", "transferring"); "cancel" has both spellings
_DOUBLE_FINAL = {"stop", "flag", "drop", "submit", "resubmit", "transfer", "cancel"}


def _participles(verb: str) -> list[str]:
    if verb in _IRREGULAR_PARTICIPLE:
        return [_IRREGULAR_PARTICIPLE[verb]]
    forms = [verb + "d" if verb.endswith("e") else verb[:-1] + "ied" if verb.endswith("y") and verb[-2] not in "aeiou"
             else verb + "ed"]
    if verb in _DOUBLE_FINAL:
        forms.append(verb + verb[-1] + "ed")
    return forms


def _gerunds(verb: str) -> list[str]:
    forms = [verb[:-1] + "ing" if verb.endswith("e") and not verb.endswith(("ee", "ye")) else verb + "ing"]
    if verb in _DOUBLE_FINAL:
        forms.append(verb + verb[-1] + "ing")
    return forms


def _alternation(words) -> str:
    return "|".join(re.escape(w).replace(r"\-", "-?") for w in sorted(set(words), key=len, reverse=True))


# "re-", "retro-", "un-" on any verb ("re-send", "retro-authorize", "unblock"); "retroactively" before it.
_PREFIX = r"(?:re-|retro-?|un-?)?"
_VERB = rf"(?:retroactively\s+)?{_PREFIX}(?:{_alternation(ACTION_VERBS)})"
_VERB_ING = rf"{_PREFIX}(?:{_alternation(g for v in ACTION_VERBS for g in _gerunds(v))})"
_CREATE = rf"{_PREFIX}(?:{_alternation(_CREATE_VERBS)})"
# The participles, for "I need the check reissued", "can her PA be escalated today?"
PARTICIPLES = rf"(?:{_alternation(p for v in ACTION_VERBS for p in _participles(v))})"
_PARTICLE = r"(?:\s+(?:out|back|through|off|in|up|over|down|ahead\s+with|on))?"

# One case's things: what a claim action is done to.
CASE_NOUNS = (
    r"(?:claims?|appeals?|auths?|authori[sz]ations?|pre-?auth\w*|prior\s+auth\w*|pre-?cert\w*|PAs?|referrals?|"
    r"payments?|pay|checks?|cheques?|refunds?|reimbursements?|grievances?|complaints?|disputes?|denials?|"
    r"exceptions?|overrides?|adjustments?|EOBs?|remits?|remittances?|overpayments?|underpayments?|"
    r"recoup(?:ment)?s?|offsets?|holds?|pends?|edits?|cases?|requests?|reconsiderations?|redeterminations?|"
    r"decisions?|determinations?|letters?|admissions?|stays?|days|visits?|sessions?|units|copays?|co-?pays?|"
    r"coinsurance|deductibles?|accumulators?|cost[\s-]?shar(?:e|ing)|balances?|bills?|invoices?|charges?|"
    r"fees?|premiums?|coverage|eligibility|enrollments?|terminations?|term\s+date|effective\s+date|PCP|"
    r"records?|profiles?|file|ID\s+cards?|cards?|orders?|prescriptions?|refills?|scripts?|transfers?|"
    r"agreements?|SCA|rates?|amounts?|allowed(?:\s+amount)?|interest|funds|EFTs?|transactions?|benefits?|"
    r"limits?|deadlines?|flags?|lock-?ins?|status|DOS|dates?\s+of\s+service|NDC|modifiers?|place\s+of\s+service|"
    r"diagnos[ie]s|837s?|submissions?|resubmissions?|corrections?|extensions?|waivers?|approvals?|retros?|"
    r"episodes?|tickets?|medication|meds|drugs?|infusions?|surgery|procedures?|MRI|CT|transport|ambulance|"
    r"newborn|baby|dependents?|spouse|policy|plan)\b"
)
_DET = (r"(?:the|this|that|these|those|her|his|their|its|our|my|your|both|every|each|all(?:\s+of)?(?:\s+(?:the|her|his|their))?"
        r"|[\w-]+'s|[\w-]+s')")
# modifiers never cross a preposition or a determiner ("the summary of the appeal" is not an appeal)
_MODIFIERS = (r"(?:(?!(?:of|for|on|about|to|with|in|from|by|at|the|a|an|and|or|if|when|is|are|was|were|whether|that|"
              r"which|who|because|so|but|asks|says|said|wants|asked|told)\s)"
              r"[\w'./#-]+\s+){0,4}?")
_CASE_OBJECT = (
    rf"(?:{_DET}\s+{_MODIFIERS}{CASE_NOUNS}"
    # a mass noun with no determiner: "expedite payment on ...", "override timely filing on this one"
    r"|(?:payment|funds|coverage|eligibility|timely\s+filing|the\s+filing\s+limit)\b"
    # "it", "them", "this one", "that" as the whole object
    r"|(?:it|them|this(?:\s+one)?|that(?:\s+one)?|these|those|both)(?=\s*(?:$|[.,;:!?]|\s(?:to|for|on|in|through|back|"
    r"out|off|over|today|tonight|now|asap|already|again|please|pls|so|and|then|as|under|with|from|by|before|"
    r"right|immediately|this|at)\b))"
    # "send the provider a new check", "refund the member the coinsurance"
    rf"|(?:the\s+(?:member|provider|office|facility|hospital|pharmacy|clinic|subscriber|group|lab|caller|doctor)|"
    rf"her|him|them)\s+(?:a|an|the|her|his|their|its|another)\s+{_MODIFIERS}{CASE_NOUNS})"
)
_NEW_OBJECT = rf"(?:a|an|one|another)\s+(?:[\w-]+\s+){{0,3}}?{CASE_NOUNS}"

# The asker lends PolicyDesk authority to act: "I authorize you to", "you have my permission to",
# "you are cleared to". An authority claim is still a request to act on the case.
_AUTHORITY = (
    r"(?:(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+(?:hereby\s+)?(?:authori[sz](?:e|es|ing)|"
    r"(?:permit|permitt|allow|instruct|direct|order|empower|clear|tell)(?:s|ing)?)\s+(?:you|u)\s+to\s+"
    r"|(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+(?:hereby\s+)?giv(?:e|ing)\s+(?:you|u)\s+(?:the\s+|my\s+|our\s+|full\s+)*"
    r"(?:authority|authori[sz]ation|permission|approval|go-?ahead|ok(?:ay)?|green\s+light|clearance)\s+to\s+"
    r"|(?:you|u)\s+have\s+(?:my|our|the)\s+(?:[\w-]+\s+)?(?:authority|authori[sz]ation|permission|approval|go-?ahead|"
    r"ok(?:ay)?|sign-?off|blessing|clearance)\s+to\s+"
    r"|(?:you|u)(?:'re|\s+are)\s+(?:hereby\s+|now\s+)?(?:authori[sz]ed|permitted|allowed|cleared|empowered)\s+to\s+)"
)

# What makes a clause a request addressed to PolicyDesk.
_LEAD = r"(?:(?:ok(?:ay)?|so|hey|hi|hello|well|alright|also|now|then|and|but|oh|um|yeah|yes|great|thanks|sorry)[\s,!]+)*"
_POLITE = (r"(?:(?:please|pls|plz|kindly|just|also|really|quickly|immediately|now)\s+)*"
           r"(?:go\s+(?:in|ahead)\s+(?:and|n|&)\s+)?")
_OPENER = (
    r"(?:(?:can|could|would|will)\s+(?:you|u|you\s+guys|y'?all|someone|somebody|your\s+team|the\s+team)\s+"
    r"(?:please\s+|also\s+|just\s+|quickly\s+)*(?:(?:be\s+able|be\s+willing|have\s+time)\s+to\s+)?"
    r"|i(?:'d|\s+would)\s+like\s+(?:you|u)\s+to\s+|(?:i|we)\s+(?:really\s+|just\s+)?(?:need|want)\s+(?:you|u)\s+to\s+"
    r"|(?:i|we)(?:'m|'re|\s+am|\s+are)\s+asking\s+(?:you|u)\s+to\s+|(?:you|u)\s+(?:need|have)\s+to\s+"
    r"|we\s+(?:really\s+|still\s+)?(?:need\s+to|have\s+to|gotta|must|should|ought\s+to)\s+"
    r"|let'?s\s+|go\s+ahead\s+(?:and|n|&)\s+|(?:is\s+there\s+(?:any|a)\s+way|any\s+chance)\s+(?:you|u)\s+(?:can|could)\s+"
    r"|(?:do\s+me\s+a\s+favou?r\s+and|time\s+to)\s+|" + _AUTHORITY + r")?"
)
# a sentence start, or after a comma when the sentence is not a condition or a wh-question
# (not after an abbreviation such as "Dr." or "Mr.")
_SENTENCE_START = r"(?:^|(?<=[.!?;:])(?<!\b[A-Z][a-z]\.)(?<!\b[A-Z]\.)(?<!\bMrs\.)\s*|(?<=[.!?;:]['\"”’)])\s*|(?<=\s[-–—])\s*)"
_MID_OPENER = (
    r"(?:\b(?:please|pls|plz|kindly)\s+|\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|also\s+|just\s+)*"
    r"|\bi(?:'d|\s+would)\s+like\s+(?:you|u)\s+to\s+|\b(?:i|we)\s+(?:really\s+|just\s+)?(?:need|want)\s+(?:you|u)\s+to\s+"
    r"|\bgo\s+ahead\s+(?:and|n|&)\s+|,\s*(?:and\s+|then\s+|so\s+|just\s+|please\s+)*"
    r"|(?P<conj>\b(?:and|then|&)\s+(?:then\s+|also\s+)?)|\b" + _AUTHORITY + r")"
)

_KNOWN = re.compile(
    rf"(?:{_SENTENCE_START}{_LEAD}{_POLITE}{_OPENER}{_POLITE}|{_MID_OPENER}{_POLITE}(?:go\s+ahead\s+(?:and|n|&)\s+)?)"
    rf"(?P<verb>{_VERB})(?:\s+(?:and|&|n)\s+{_VERB})?{_PARTICLE}\s+(?:{_CASE_OBJECT})", _I)
# "can we bump the PT visits to 30 for him", "could we reissue her check today" (not "can we reissue the check
# if it is stale-dated?": a condition or "ever" makes it a question about the rule)
_CAN_WE = re.compile(
    rf"\b(?:can|could|should|may|shall)\s+we\s+(?:please\s+|just\s+|still\s+|go\s+ahead\s+and\s+)*"
    rf"(?P<verb>{_VERB}){_PARTICLE}\s+(?:{_CASE_OBJECT})", _I)
_GENERIC = re.compile(r"\b(?:if|when|whenever|unless|once|ever|in\s+general|generally|usually|typically|normally|"
                      r"always|any|a|an)\b", _I)
# "Go ahead." as a sentence of its own
_GO_AHEAD = re.compile(rf"{_SENTENCE_START}{_LEAD}(?:please\s+|just\s+)*(?P<verb>go\s+ahead)"
                       r"(?:[,\s]+(?:please|pls|now|then|thanks))*\s*(?:[.!]+(?:\s|$)|$)", _I)
_KNOWN_NEW = re.compile(
    rf"(?:{_SENTENCE_START}{_LEAD}{_POLITE}{_OPENER}{_POLITE}|{_MID_OPENER}{_POLITE})"
    rf"(?P<verb>{_CREATE}){_PARTICLE}\s+{_NEW_OBJECT}", _I)
# "would you mind reissuing the check", "any chance of expediting her appeal"
_GERUND = re.compile(
    rf"\b(?:(?:would|do)\s+you\s+mind|mind|any\s+chance\s+of|how\s+about|start)\s+(?P<verb>{_VERB_ING}){_PARTICLE}\s+"
    rf"(?:{_CASE_OBJECT})", _I)
# A bare imperative that is the whole sentence: "Please escalate.", "Reissue it today.", "Resubmit, thanks."
_BARE = re.compile(
    rf"{_SENTENCE_START}{_LEAD}{_POLITE}(?:go\s+ahead\s+(?:and|n|&)\s+)?(?P<verb>{_VERB})(?:\s+(?:out|back|through|off|over))?"
    r"(?:\s+(?:it|this|that|them|this\s+one|that\s+one))?(?:[,\s]+(?:please|pls|now|asap|today|already|thanks|"
    r"thank\s+you|right\s+away|immediately))*\s*(?:[.!]+(?:\s|$)|$|,\s*(?=(?:this|the|it|she|he|they|that)\b))", _I)

# Asked to decide the case: "Decide whether the member's appeal should be granted", "determine if her
# claim gets paid", "decide whether to grant the appeal", "rule on the member's appeal". The clause
# names one case's thing and its outcome (an action verb's participle), which a rule question does not
# ("determine whether prior authorization is required").
_DECIDE_VERB = r"(?:decide|determine|rule|judge|adjudicate|make\s+(?:a|the)\s+(?:call|decision|determination|ruling))"
_DECIDE = re.compile(
    rf"(?:{_SENTENCE_START}{_LEAD}{_POLITE}{_OPENER}{_POLITE}|{_MID_OPENER}{_POLITE})"
    rf"(?P<verb>{_DECIDE_VERB})(?:\s+(?:on|about))?\s+(?:"
    rf"(?:whether|if)\s+(?:or\s+not\s+)?(?:to\s+{_VERB}{_PARTICLE}\s+(?:{_CASE_OBJECT})"
    rf"|(?:{_CASE_OBJECT})\s+(?:[\w']+\s+){{0,3}}?{PARTICIPLES}\b)"
    rf"|(?<=on\s)(?:{_CASE_OBJECT}))", _I)
# "Do it now.", "Execute this.": carrying out what the asker just requested, as a sentence of its own.
_DO_IT = re.compile(rf"{_SENTENCE_START}{_LEAD}{_POLITE}(?P<verb>do|execute|action)\s+(?:it|this|that)"
                    r"(?:[,\s]+(?:now|please|pls|today|asap|then|right\s+away|immediately))*\s*(?:[.!]+(?:\s|$)|$)", _I)

# The first word of an imperative with a verb the inventory does not list: anything but a function word,
# an information verb, or an inflected form (a plural noun, a participle, a gerund or an adverb).
_NOT_IMPERATIVE = frozenset("""
    a an the this that these those her his their its our my your i you he she it we they me him them us
    is are was were be been being am do does did done has have had having can could will would shall should
    may might must ought need let lets let's get got
    what whats what's when where which who whom whose why how whether
    if unless once while because although though since until till after before during per re regarding
    concerning about for from on in at by with without within into onto to of off over under between through
    via than then so but and or nor yet also even only just still both either neither all any each every
    some no not none never always maybe perhaps probably actually basically honestly please pls plz kindly
    thanks thank hello hi hey sorry ok okay yes yeah well now today tomorrow yesterday here there
    check confirm verify explain tell show find look know understand describe clarify compare define list
    summarize review note read remember help see say ask call quote cite give provide share walk remind
    assume suppose imagine consider given like unlike same new old other another such quick question
    anyway anyways again meanwhile besides instead otherwise earlier later first second third next last fyi
    btw plus ps hmm um uh wait
    """.split())
_UNKNOWN_IMPERATIVE = re.compile(
    rf"{_SENTENCE_START}{_LEAD}{_POLITE}(?P<verb>[a-z][a-z-]{{2,}})\s+(?:{_DET}\s+{_MODIFIERS}{CASE_NOUNS})", _I)
_INFLECTED = re.compile(r"(?:ing|ed|ly|[^s]s)$", _I)
_EITHER_OR = re.compile(r"\bor\b[^.!?]*\?", _I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+")
# the sentence before the comma is a condition or a question: "if the claim denies, refile it?"
_CONDITION_FIRST = re.compile(
    r"^\W*(?:if|when|whenever|once|after|before|unless|until|to|for|since|while|in\s+case|in\s+order|how|what|"
    r"what's|when|where|which|who|why|do|does|did|is|are|can|could|should|would|will|may)\b", _I)


def _sentence_at(question: str, pos: int) -> tuple[int, int]:
    start = 0
    for m in _SENTENCE_SPLIT.finditer(question):
        if m.start() >= pos:
            return start, m.start()
        start = m.end()
    return start, len(question)


def _keeps(question: str, m: re.Match, by_comma: bool) -> bool:
    start, end = _sentence_at(question, m.start("verb"))
    sentence = question[start:end]
    if opens_with_wh(sentence):
        return False
    if _EITHER_OR.search(question, m.start("verb"), end + 1) and not re.search(
            r"\b(?:please|pls|today|now|asap)\b", sentence, _I):
        return False
    if by_comma and _CONDITION_FIRST.search(sentence):
        return False
    return True


# What turns a bare imperative that ends in "?" back into a request ("Reissue it today, please?").
_ASKED_ANYWAY = re.compile(r"\b(?:please|pls|plz|kindly|can|could|would|will|you|u|mind|let'?s|go\s+ahead|need|want|"
                           r"today|now|asap|right\s+away)\b", _I)


def _bare_question(question: str, m: re.Match, lead: str) -> bool:
    """An imperative with no request word whose sentence ends in "?" asks what to do ("Apply the
    deductible first, then coinsurance?", "Refile it or send a corrected claim?")."""
    start, end = _sentence_at(question, m.start("verb"))
    sentence = question[start:end].rstrip()
    return sentence.endswith("?") and not _ASKED_ANYWAY.search(sentence)


def case_action_spans(question: str) -> list[tuple[int, int]]:
    """Spans of requests to act on one case, by shape (see the module docstring)."""
    spans = []
    for pattern in (_KNOWN, _KNOWN_NEW, _GERUND, _BARE, _GO_AHEAD, _DECIDE, _DO_IT):
        for m in pattern.finditer(question):
            lead = question[m.start():m.start("verb")].lstrip()
            by_comma = lead.startswith(",") or bool("conj" in pattern.groupindex and m.group("conj"))
            if _keeps(question, m, by_comma) and not _bare_question(question, m, lead):
                spans.append((m.start("verb"), m.end()))
    for m in _CAN_WE.finditer(question):
        start, end = _sentence_at(question, m.start("verb"))
        if _keeps(question, m, False) and not _GENERIC.search(question[m.end():end]):
            spans.append((m.start("verb"), m.end()))
    for m in _UNKNOWN_IMPERATIVE.finditer(question):
        verb = m.group("verb").lower()
        if verb in _NOT_IMPERATIVE or _INFLECTED.search(verb) or verb.endswith("'s"):
            continue
        start, end = _sentence_at(question, m.start("verb"))
        if _keeps(question, m, False) and not question[start:end].rstrip().endswith("?"):
            spans.append((m.start("verb"), m.end()))
    return spans


ACTION_WORD = re.compile(rf"\b(?:{_VERB}|{_VERB_ING}|{PARTICIPLES})\b", _I)
