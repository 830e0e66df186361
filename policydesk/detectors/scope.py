"""Out of scope: questions that are not about this health plan's policies.

Pure text detection for the refusal gate. Conservative on purpose: any health-plan vocabulary
(plan, claim, member, provider, benefit, coverage, ...) passes an off-topic word list, and
retrieval then abstains if nothing applies. Four kinds are out of scope whatever words they use:
clinical advice (a dose, a diagnosis, speculating what a symptom is, where to go for care) unless
it asks about coverage; legal advice; another payer's rules (the names are a setting,
`POLICYDESK_OTHER_PAYER_NAMES`), unless that payer is the member's other coverage; and shopping
for insurance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_I = re.IGNORECASE

_DOMAIN = re.compile(
    r"\b(?:plans?|polic(?:y|ies)|claims?|members?|providers?|benefits?|cover(?:ed|age|s)?|"
    r"appeals?|authori[sz]ations?|auth|pre-?auth|pre-?cert\w*|referrals?|copays?|co-?pays?|"
    r"coinsurance|deductibles?|out-of-pocket|premiums?|(?:in|out-of)-?network|network|"
    r"formular(?:y|ies)|pharmacy|prescriptions?|eligib\w*|enroll\w*|timely\s+filing|filing\s+limits?|"
    r"denials?|denied|grievances?|complaints?|eob|explanation\s+of\s+benefits|cob|"
    r"coordination\s+of\s+benefits|subscribers?|dependents?|medicare|medicaid|cpt|hcpcs|"
    r"icd-?10|modifiers?|billing|billed|reimburs\w*|adjudicat\w*|wiki|call\s+notes?|pcp|"
    r"specialists?|telehealth|dme|utilization|hipaa|phi|escalat\w*|supervisor|exclusions?|"
    r"waiting\s+period|cobra|hsa|fsa|hra|date\s+of\s+service|prior\s+auth\w*|"
    r"procedures?|services?|visits?|rep|reps|caller|compliance|audit|fraud|siu|"
    r"effective\s+date|version|in\s+force|superseded|notice|letter|"
    # pharmacy claim operations: a refill reject or an override is a plan rule, not a dose question
    r"refills?|refill-too-soon|rejects?|rejected|overrides?|overriding|prescribers?|rx|days?\s+supply|"
    r"quantity\s+limits?|step\s+therapy|dispens\w*)\b",
    _I,
)
_OFF_TOPIC = tuple(re.compile(p, _I) for p in (
    r"\b(?:weather|forecast|temperature\s+outside|rain(?:ing)?|snow(?:ing)?)\b",
    r"\b(?:nfl|nba|mlb|nhl|super\s+bowl|world\s+series|world\s+cup|playoffs?|football|"
    r"baseball|basketball|soccer|hockey|tennis|golf)\b|\bwho\s+won\b|\bscore\s+of\s+the\b",
    r"\b(?:recipes?|bake|baking|cook(?:ing)?|ingredients?)\b",
    r"\b(?:stocks?|share\s+price|ticker|nasdaq|dow\s+jones|s&p\s+500|crypto\w*|bitcoin|"
    r"invest(?:ing|ment)?)\b",
    r"\b(?:write|compose|tell)\s+(?:me\s+)?(?:a|an)\s+(?:poem|song|story|joke|essay|haiku|limerick)\b",
    r"\b(?:dose|dosage)\b|\bhow\s+(?:much|many)\b[^.?!]{0,40}\bshould\s+i\s+take\b|"
    r"\bshould\s+i\s+take\b|\bdiagnos(?:e|is)\b|\bsymptoms?\b|\bdo\s+i\s+have\s+(?:a|an)\b",
    r"\blegal\s+advice\b|\b(?:can|should)\s+i\s+sue\b|\b(?:lawyer|attorney|lawsuit|divorce|"
    r"custody)\b",
    r"\b(?:movies?|restaurants?|horoscope|lottery|vacation|capital\s+of)\b",
    r"^\W*who\s+(?:wrote|invented|discovered|painted|composed|directed|founded|was\s+the\s+first)\b",
    # the workplace, not the plan: HR, payroll, IT, facilities
    r"\b(?:pto|paid\s+time\s+off|sick\s+days?|time\s+off|payroll|paychecks?|pay\s*stubs?|direct\s+deposit|timesheets?|"
    r"time\s*cards?|w-?2s?|401\s*\(?k\)?|dress\s+code|holiday\s+party|conference\s+rooms?|headsets?|vpn|wi-?fi|"
    r"passwords?|log\s*in|login|laptops?|printers?|outlook|badges?|parking|cafeteria|break\s+room|"
    r"expense\s+reports?|performance\s+reviews?|human\s+resources|new\s+hires?|overtime|shift\s+swaps?)\b",
    # help with something that is not a plan question ("help me plan a team event", "help me write a toast")
    r"\bhelp\s+me\s+(?:write|plan|organi[sz]e|draft|pick|choose|decide|book|prepare|study|learn|cook|fix|find\s+a)\b",
))
# Shopping for insurance is not a question about this plan's policies.
_PLAN_SHOPPING = re.compile(
    r"\b(?:which|what)\s+(?:insurer|insurance\s+company|carrier|health\s+plan)\s+(?:is|has|offers|should|would)\b"
    r"|\b(?:best|cheapest|good|better|top)\s+(?:insurer|insurance\s+(?:company|plan|carrier)|health\s+(?:plan|insurer)|"
    r"carrier)s?\b|\bshop(?:ping)?\s+for\s+(?:health\s+)?insurance\b", _I)
# Another payer named as the member's other coverage: a coordination-of-benefits question, in scope.
_OTHER_COVERAGE = re.compile(
    r"\b(?:primary|secondary|tertiary|other\s+(?:insurance|coverage|carrier|payer|plan)|coordinat\w+|cob|"
    r"pays?\s+first|paid\s+first|dual(?:ly)?|also\s+(?:has|have|covered)|both\s+plans|switch\w*\s+(?:from|to)|"
    r"(?:from|to)\s+us\b|through\s+(?:her|his|their)\s+(?:employer|job|spouse|husband|wife))\b", _I)


@lru_cache(maxsize=16)
def _payer_regexes(names: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    if not names:
        return ()
    name = "(?:" + "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in sorted(names, key=len, reverse=True)) + ")"
    policy_verbs = (r"(?:cover|covers|require|requires|pay|pays|handle|handles|allow|allows|deny|denies|reimburse|"
                    r"reimburses|need|needs|accept|accepts|use|uses|process|processes|approve|approves|charge|charges)")
    return tuple(re.compile(p, _I) for p in (
        rf"\b{name}'s?(?=\s)",  # "Humana's timely filing limit"
        rf"\b(?:does|do|did|will|would|can|how\s+does|how\s+do|what\s+does)\s+{name}\s+{policy_verbs}\b",
        # the payer as the subject of any rule verb: "how long does Aetna give providers", "what Cigna allows"
        rf"\b(?:does|do|did|will|would|can|could|should)\s+{name}\s+(?!(?:have|has|had)\s+(?:the\s+)?(?:member|her|him|them))[a-z]+\b",
        rf"\b{name}\s+(?:gives?|allows?|lets?|requires?|says?|sets?|considers?|treats?|expects?|wants?|uses?|"
        rf"pays?|covers?|denies|reimburses|limits?|caps?|makes?|needs?|accepts?|takes?)\b",
        rf"\b{name}\s+(?:plans?|polic(?:y|ies)|rules?|members?|formulary|network|guidelines?|"
        rf"appeals?\s+(?:deadline|process)|"
        rf"timely\s+filing|prior\s+auth\w*|fee\s+schedule)\b",
        rf"\b(?:at|under|with|for)\s+{name}\s*(?:\?|$)",
    ))


def _default_other_payers() -> tuple[str, ...]:
    from policydesk.config import get_settings

    return tuple(get_settings().OTHER_PAYER_NAMES)


def asks_about_other_payer(question: str, other_payers: Sequence[str] | None = None) -> bool:
    """Another payer's rules asked about (a setting lists the names), not that payer as the member's
    other coverage."""
    names = tuple(other_payers) if other_payers is not None else _default_other_payers()
    if _OTHER_COVERAGE.search(question):
        return False
    return any(p.search(question) for p in _payer_regexes(names))


# Clinical advice (a dose, a diagnosis, what to take) is out of scope even when it names a member;
# a coverage question about a drug or a diagnosis is not.
_CLINICAL_ADVICE = re.compile(
    r"\b(?:what|which)\s+(?:[\w-]+\s+){0,3}(?:dose|dosage|medication|medicine|antibiotic|drug)\s+should\b"
    r"|\bshould\s+(?:i|he|she|they|the\s+member|the\s+patient)\s+take\b"
    r"|\bwhat'?s\s+wrong\s+with\b|\bdiagnos(?:e|is)\b|\bsymptoms?\s+of\b|\blook\s+cancerous\b"
    # is a reading or a symptom normal / dangerous; is it safe to take, stop, skip or double a dose
    r"|\bis\s+(?:it|that|this|a|an|the|her|his|their)\b[^?.!]{0,50}\b(?:normal|dangerous|serious|contagious)\b"
    r"|\b(?:safe|ok(?:ay)?|dangerous)\s+(?:for\s+(?:[\w'-]+\s+){1,3})?to\s+(?:take|stop|skip|double|mix|combine)\b"
    # not taking a call, a message or a break ("is it okay to take a member's call if ...")
    r"(?!\s+(?:(?:a|the|this|that|her|his|their|my|an?other)\s+)?(?:(?:member|caller|provider)'?s?\s+)?"
    r"(?:calls?|messages?|breaks?|notes?|lunch|payments?|time|ownership|over|down|a\s+look|escalations?)\b)"
    r"|\b(?:a\s+heart\s+attack|a\s+stroke|cancer)\s*\?", _I)
# Speculating about what a symptom is, or where to go for care, is clinical advice too ("could that be
# angina?", "sounds like it's broken", "should he go to urgent care or just ice it", "is 48 too low for a
# resting heart rate?"), when the question names a sign, a body part or a reading.
_CLINICAL_SIGN = re.compile(
    r"\b(?:pain|aches?|aching|rash|fever|cough\w*|swollen|swelling|bruis\w*|bleed\w*|lumps?|moles?|dizz\w*|"
    r"nause\w*|vomit\w*|headaches?|migraines?|chest|short\s+of\s+breath|breathing|tightness|numb\w*|tingl\w*|"
    r"sore|infected|infection|itch\w*|blisters?|sprain\w*|fractur\w*|broken|bones?|ankle|knee|wrist|hip|"
    r"blood\s+(?:sugar|pressure)|heart\s+rate|pulse|temperature|symptoms?|wound|stitches|glucose|spots?|"
    r"diarrh\w*|fatigue|seizures?|faint\w*|palpitations?|throat|stomach|cramp\w*|wheez\w*|lesions?|"
    r"mg|pills?|tablets?|supplements?|medications?|meds)\b", _I)
_SPECULATION = re.compile(
    r"\b(?:could|might|would|can)\s+(?:that|this|it|she|he|they)\s+(?:be|mean)\b"
    r"|\bis\s+(?:it|that|this|she|he)\s+(?:likely|probably|possibly|maybe|just)\b"
    r"|\bis\s+(?:it|that|this)\s+(?:an?\s+)?\w+(?:\s+\w+)?\s*\?"
    r"|\bsounds?\s+like\b|\b(?:does|do)\s+(?:that|this|it)\s+(?:sound|seem|look)\b|\bseems?\s+likely\b"
    r"|\bwhat\s+(?:would|could|might|usually|typically|commonly|normally)?\s*(?:causes?|be\s+causing)\b"
    r"|\bwhat(?:'s|\s+is)\s+causing\b"
    r"|\b(?:could|might|can)\s+(?:[\w'-]+\s+){1,3}?be\s+(?:from|caused\s+by|due\s+to|related\s+to|a\s+sign\s+of|"
    r"a\s+symptom\s+of|an?\s+side\s+effect)\b"
    r"|\bis\s+\d+(?:\s*(?:/|over)\s*\d+)?\s+(?:too\s+)?(?:high|low|normal|dangerous|ok(?:ay)?)\b"
    r"|\btoo\s+(?:low|high|fast|slow)\b|\brecovery\s+time\b|\bhow\s+long\s+(?:to|does\s+it\s+take\s+to|until)\s+"
    r"(?:heal|recover)\b|\b(?:interact|interaction)s?\b", _I)
_WHERE_FOR_CARE = re.compile(
    r"\bshould\s+(?:i|he|she|they|the\s+(?:member|patient|caller|child|baby|kid))\s+(?:go\s+to|see|call)\s+"
    r"(?:urgent\s+care|the\s+er|an?\s+er|the\s+emergency|a\s+doctor|the\s+doctor|a\s+specialist|911)\b", _I)
# Legal advice is out of scope even when it names a member or the plan ("can the member sue the hospital?").
# Clinical advice by category, whatever the drug, condition or sign (the lists name kinds, not cases):
# - two things taken together ("take ibuprofen while she's on a blood thinner", "mix X with Y");
# - recommending a drug or a treatment ("recommend a good antidepressant", "what's the best thing for a rash");
# - whether something is safe in pregnancy, for travel, with a condition ("safe for a pregnant member to fly");
# - whether a sign needs care ("is this rash something she should go to urgent care for", "does that cut need
#   stitches");
# - dosing ("how many mg can she take", "max dose of").
# A coverage question about the same things passes (`_COVERAGE`: covered, formulary, copay, claim, ...).
_CLINICAL_MODAL = r"(?:should|can|could|may|is\s+it\s+(?:ok(?:ay)?|safe|fine|alright|bad)(?:\s+for\s+(?:[\w'-]+\s+){1,3})?\s*to|ok(?:ay)?\s+to|safe\s+to)"
_CLINICAL_CATEGORY = re.compile(
    rf"\b{_CLINICAL_MODAL}\s+(?:[\w'-]+\s+){{0,3}}?(?:take|taking|mix|combine|use|drink|have)\s+(?:[\w'-]+\s+){{1,4}}?"
    r"(?:while|with|and|alongside|on\s+top\s+of|together|after|before)\b[^?.!]{0,40}"
    r"\b(?:on\s+(?:an?\s+|her\s+|his\s+|their\s+)?[\w-]+|taking|pills?|meds|medications?|drugs?|alcohol|thinner|"
    r"inhaler|insulin|antibiotics?|chemo\w*|supplements?|vitamins?)\b"
    r"|\b(?:interact\w*|contraindicat\w*)\s+with\b|\bdrug\s+interactions?\b"
    r"|\b(?:recommend|suggest|prescribe)\s+(?:me\s+|us\s+)?(?:a|an|some|the|any)?\s*(?:good|safe|strong|better|best|mild|natural|"
    r"decent|effective|gentle|over-the-counter|otc)?\s*(?:[\w-]+\s+){0,2}?(?:anti[\w-]+|drugs?|medications?|medicines?|meds|"
    r"pills?|treatments?|therap(?:y|ies|ist)|remed(?:y|ies)|painkillers?|pain\s+relievers?|supplements?|creams?|"
    r"ointments?|sleep\s+aids?|exercises?|diet|stretches)\b"
    r"|\b(?:what|which)(?:'s|\s+is|\s+are)?\s+(?:the\s+)?best\s+(?:[\w-]+\s+){0,2}?(?:drugs?|medications?|medicines?|"
    r"treatments?|remed(?:y|ies)|thing|pills?|antidepressants?|antibiotics?)\s+(?:for|to)\b"
    r"|\b(?:safe|unsafe|dangerous|risky|harmful|advisable)\s+(?:for\s+(?:[\w'-]+\s+){1,4})?(?:to|during|while|in|with)\s+"
    r"(?:[\w'-]+\s+){0,3}?(?:fly|flying|travel\w*|pregnan\w*|breastfeed\w*|nursing|exercise|exercising|drive|driving|"
    r"run|running|swim|swimming|lift\w*|work\w*\s+out|drink\w*|eat\w*|take|taking|get\s+(?:a|the)\s+(?:vaccine|shot)|"
    r"diabet\w*|asthma|a\s+heart\s+condition|high\s+blood\s+pressure)\b"
    r"|\b(?:safe|unsafe|dangerous|risky|ok(?:ay)?)\s+(?:for\s+)?(?:a\s+|the\s+|my\s+|her\s+)?(?:pregnant|nursing|"
    r"breastfeeding|diabetic|asthmatic|elderly)\b"
    r"|\b(?:pregnant|pregnancy)\b[^?.!]{0,40}\b(?:fly|flying|travel\w*|plane|flight|cruise|trip|safe|eat|drink|exercise)\b"
    r"|\bsomething\s+(?:she|he|they|i|the\s+member)\s+should\s+(?:go|see|get|worry|be)\b"
    r"|\b(?:she|he|the\s+(?:member|patient))\s+should\s+(?:go|head|rush)\s+(?:to|in\s+to)\s+(?:the\s+)?(?:er|urgent\s+care|"
    r"emergency\s+room|hospital)\b"
    r"|\bshould\s+(?:[\w'-]+\s+){1,3}?(?:keep|stop|continue|start|hold\s+off\s+on|skip|quit)\s+(?:taking|using|her|his|their)\b"
    r"|\b(?:should|does|do|would|will)\s+(?:she|he|they|i|it|that|this|these|those|her|his|their|the|my)\s+(?:[\w'-]+\s+){0,3}?"
    r"(?:go\s+(?:to|in)|head\s+(?:to|in)|need|needs|get\s+(?:it\s+)?(?:checked|looked\s+at|seen)|be\s+seen|see\s+a)\b[^?.!]{0,30}"
    r"\b(?:urgent\s+care|er\b|emergency\s+room|e\.r\.|doctor|stitches|antibiotics|x-?ray|hospital|a\s+specialist|"
    r"medical\s+attention|checked|seen)\b"
    r"|\bhow\s+(?:much|many)\s+(?:mg|milligrams?|micrograms?|mcg|pills?|tablets?|capsules?|doses?|drops?|ml|puffs?|"
    r"units|teaspoons?|tablespoons?|shots?|advil|tylenol|ibuprofen|aspirin|acetaminophen|melatonin|benadryl|caffeine|"
    r"alcohol)\b[^?.!]{0,40}\b(?:can|should|could|may|is\s+(?:it\s+)?(?:safe|too\s+much))\b"
    r"|\b(?:max(?:imum)?|safe|right|correct|usual|normal|starting|recommended|daily)\s+(?:daily\s+)?dos(?:e|age|ing)\s+(?:of|for)\b",
    _I)
_LEGAL_ADVICE = re.compile(
    r"\blegal\s+advice\b|\b(?:should|can|could)\s+(?:i|she|he|they|we|the\s+(?:member|caller|patient|provider|family))\s+"
    r"sue\b|\b(?:hire|get|need)\s+an?\s+(?:lawyer|attorney)\b", _I)
_COVERAGE = re.compile(
    r"\b(?:cover(?:ed|age|s)?|polic(?:y|ies)|formular(?:y|ies)|auth\w*|benefits?|limits?|copays?|claims?|"
    r"costs?|cheaper|less\s+expensive|pay|billing|code|icd|referral|in-network|network)\b", _I)
# How to handle a member's clinical question is a process question ("what do I tell a member who asks
# whether she can take X with Y?"): the nurse line or pharmacist referral is a plan rule.
_RESPONSE_FRAME = re.compile(
    r"\b(?:how\s+(?:should|do|can)\s+(?:i|we|a\s+rep|the\s+rep|reps)\s+(?:respond|answer|handle|reply|route)|"
    r"what\s+(?:do|should|can)\s+(?:i|we|reps?)\s+(?:tell|say|do)|where\s+(?:do|should)\s+(?:i|we)\s+(?:send|transfer|route|refer)|"
    r"(?:are|is)\s+(?:reps?|we|i)\s+(?:allowed|permitted|supposed)\s+to\s+(?:answer|give|advise))\b", _I)


# Out of scope whatever plan words they use ("Write a haiku about claims processing", "how do I reset my
# password for the claims system?"): creative writing, the staff member's own IT and workplace, and general
# knowledge.
_CREATIVE_NOUN = (r"(?:poems?|poetry|haikus?|limericks?|sonnets?|songs?|lyrics|raps?|jingles?|rhymes?|jokes?|puns?|"
                  r"riddles?|stor(?:y|ies)|fairy\s*tales?|toasts?|slogans?|taglines?|mottos?|chants?|acrostics?|"
                  r"screenplay|(?:motivational|inspirational|inspiring|funny)\s+(?:quotes?|sayings?|speech))")
_CREATIVE = re.compile(
    r"\b(?:write|compose|draft|pen|make\s+up|come\s+up\s+with|give\s+(?:me|us)|tell\s+(?:me|us)|create|generate|craft|"
    rf"sing)\s+(?:me\s+|us\s+)?(?:a|an|some|another|\d+)\s+(?:[\w-]+\s+){{0,3}}?{_CREATIVE_NOUN}\b"
    r"|\b(?:poem|haiku|limerick|sonnet|knock[\s-]knock)\b", _I)
_IT_THING = (r"(?:passwords?|pass\s*codes?|pins?|log\s*-?ins?|accounts?|badges?|laptops?|computers?|pcs?|monitors?|screens?|"
             r"headsets?|mics?|microphones?|keyboards?|mouse|printers?|vpn|outlook|e-?mail|inbox|calendar|teams|zoom|"
             r"softphone|desk\s*phone|workstation|citrix|mfa|2fa|tokens?|authenticator(?:\s+app)?|wi-?fi|software|"
             r"browser|chrome|excel|desktop|webcam|camera|docking\s+station|dual\s+monitors?)")
# a staff member's own device or login, and trouble with it
_MY_IT = re.compile(rf"\b(?:my|our\s+team'?s?)\s+(?:[\w-]+\s+){{0,3}}?{_IT_THING}\b", _I)
_IT_TROUBLE = re.compile(
    r"\b(?:reset|expired?|locked|unlock|forgot|lost|won'?t|doesn'?t|isn'?t|not\s+working|broken|stopped|crash\w*|"
    r"froze|frozen|install\w*|sync\w*|fix|new|replace\w*|kick\w*|drop\w*|access|log\s*(?:in|on)|sign\s+in|"
    r"help\s*desk|it|ticket|update|keeps?|jammed)\b", _I)
_STAFF_IT = re.compile(
    rf"\b(?:i'?m|i\s+am|i\s+(?:got|get)|i\s+keep\s+getting|i\s+can'?t|i\s+cannot|i\s+forgot|i\s+lost|"
    rf"i\s+need\s+(?:a\s+new|to\s+reset))\s+"
    rf"(?:[\w'-]+\s+){{0,4}}?(?:locked\s+out|log\s*(?:in|on)|sign\s+in|reset|unlock|{_IT_THING})\b"
    rf"|\b(?:reset|unlock|install|reinstall|reimage)\s+(?:my|me)\b"
    r"|\b(?:vpn|help\s*desk\s+ticket|it\s+ticket|service\s*desk|password\s+reset)\b"
    rf"|\b(?:the|my|our)\s+(?:[\w-]+\s+){{0,3}}?{_IT_THING}\b[^.?!]{{0,40}}\b(?:jammed|broken|not\s+working|"
    r"stopped\s+working|won'?t\s+(?:work|turn|connect|load|print|start|sync)|keeps?\s+(?:crashing|freezing|dropping|"
    r"kicking|disconnecting)|crashed|frozen|isn'?t\s+syncing)\b"
    # the workplace, whatever words it shares with the plan ("is tuition reimbursement available for employees")
    r"|\b(?:tuition|pto|payroll|paychecks?|pay\s*stubs?|direct\s+deposit|timesheets?|time\s*cards?|"
    r"401\s*\(?k\)?|performance\s+reviews?|shift\s+swaps?|dress\s+code|holiday\s+party|break\s+room)\b", re.IGNORECASE)
# The member's or a caller's own account is a plan question ("the member is locked out of the portal").
_SOMEONE_ELSE = re.compile(r"\b(?:member|members|caller|subscriber|provider|patient|her|his|their|she|he|they)\b", _I)
_FIRST_PERSON = re.compile(r"\b(?:my|i|i'm|me)\b", _I)
_GENERAL_KNOWLEDGE = re.compile(
    r"\bcapital\s+(?:city\s+)?of\b"
    r"|\b(?:which|what)\s+(?:planet|continent|ocean|river|mountain)\b"
    r"|\b(?:largest|biggest|smallest|tallest|longest|highest|deepest)\s+(?:country|city|animal|planet|river|mountain|"
    r"ocean|lake|building|desert)\b"
    r"|\bhow\s+(?:far|tall|high|deep|big|old)\s+is\s+(?:the\s+)?(?:moon|sun|earth|mount|mt\.?|everest|ocean|"
    r"universe|eiffel|statue)\b"
    r"|\bhow\s+many\s+(?:ounces|inches|feet|miles|cups|grams|pounds|liters|litres|kilometers|teaspoons|tablespoons|"
    r"seconds|minutes)\s+(?:are\s+)?in\s+(?:a|an|one)\b"
    r"|\bsquare\s+root\b|\bconvert\s+[\d.,]+\s*\w+\s+(?:to|into)\b"
    # translating a quoted phrase (not "translate the denial letter for the member")
    r"|\btranslate\s+['\"“‘]"
    r"|\b(?:summari[sz]e|plot\s+of)\s+(?:the\s+)?(?:plot|book|novel|movie|film)\b|\bbook\s+club\b"
    r"|\b(?:tell\s+me\s+about|what\s+is|what's|explain)\s+the\s+(?:history|origins?)\s+of\b"
    r"|\b(?:history|origins?)\s+of\s+(?:the\s+)?(?:affordable\s+care\s+act|aca|obamacare|hmos?|managed\s+care)\b", _I)


# The staff member's own employment: their own benefits or enrollment as an employee, HR, the company's
# retirement plan ("who do i talk to about my own benefits enrollment as an employee here").
_OWN_EMPLOYMENT = re.compile(
    r"\b(?:i|me|myself|i'm|i\s+am)\b[^.?!]{0,40}\bas\s+an?\s+(?:employee|staff\s+member|new\s+hire)\b"
    r"|\bas\s+an?\s+(?:employee|staff\s+member|new\s+hire)\s+(?:here|of\s+(?:this|the)\s+(?:company|plan))\b"
    r"|\bmy\s+own\s+(?:[\w-]+\s+){0,2}?(?:benefits?|coverage|health\s+(?:insurance|plan)|insurance|enrollment|"
    r"dental|vision|plan|hsa|fsa|id\s+card)\b"
    r"|\b(?:our|my)\s+(?:company'?s?|employee|staff|workplace|corporate)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:benefits?|401\s*\(?k\)?|retirement|pension|handbook|discount|wellness|open\s+enrollment|stock|"
    r"holiday|gym|parental\s+leave|leave\s+policy|bonus)\b"
    r"|\b(?:enroll|sign\s+up|register)\s+(?:myself\s+)?(?:in|for)\s+(?:the\s+)?(?:company|employee|staff|work)\b"
    r"|\b(?:talk\s+to|ask|contact|email|call|reach|tell)\s+(?:my\s+|our\s+)?(?:hr|human\s+resources)\b"
    r"|\b(?:my|our)\s+(?:hr|human\s+resources)\b"
    r"|\b(?:my|a)\s+(?:raise|salary|wages?|bonus|promotion|resignation|two\s+weeks'?\s+notice|maternity\s+leave|"
    r"paternity\s+leave|fmla|jury\s+duty|vacation\s+days?)\b", _I)
# Writing something that is not about the plan: social-media posts, bios, résumés, cover letters, cards,
# speeches (whatever they are about), and an e-mail, letter or message whose subject has no plan word.
_DRAFT_VERB = (r"(?:write|draft|compose|create|make|put\s+together|come\s+up\s+with|prepare|help\s+me\s+(?:write|"
               r"draft|with)|can\s+you\s+(?:write|draft)|i\s+need\s+(?:a|an))")
_NON_PLAN_WRITING = re.compile(
    rf"\b{_DRAFT_VERB}\s+(?:me\s+|us\s+)?(?:a|an|some|my|our|the|this|that)?\s*(?:[\w'-]+\s+){{0,4}}?"
    r"(?:linkedin|facebook|instagram|twitter|tiktok|social[\s-]media|slack\s+status|tweet|tweets|hashtags?|"
    r"captions?|bios?|résumé|resume|cv|cover\s+letter|birthday\s+(?:card|message|note)|retirement\s+card|"
    r"farewell|wedding|eulogy|speech|toast|out[\s-]of[\s-]office|ooo|dating\s+profile|personal\s+statement|"
    r"college\s+essay|essay|blog\s+post|newsletter|invitation|invite|thank[\s-]you\s+(?:note|card)|"
    r"sympathy\s+card|get[\s-]well\s+card|party|potluck|rsvp|reference\s+letter|recommendation\s+letter|"
    r"letter\s+of\s+recommendation)\b", _I)
_DRAFT_MESSAGE = re.compile(
    rf"\b{_DRAFT_VERB}\s+(?:me\s+|us\s+)?(?:a|an|some|my|our|the)?\s*(?:[\w'-]+\s+){{0,2}}?"
    r"(?:e-?mail|letter|message|note|text|memo|announcement|reply|response)\s+(?:to|for|about|asking|telling|"
    r"thanking|inviting|saying|announcing|explaining)\b(?P<rest>[^?!]*)", _I)
# Translating a sentence or phrase (not "is there a translated denial letter for the member?").
_TRANSLATE_TEXT = re.compile(
    r"\btranslate\s+(?:this|that|these|the\s+following|the\s+(?:sentence|phrase|words?|line|text|message|quote|"
    r"saying|paragraph)|(?:a|this|that)\s+(?:sentence|phrase|line|paragraph)|['\"“‘])"
    r"|\btranslate\b[^?.!]{0,60}\binto\s+(?:spanish|french|german|japanese|chinese|mandarin|cantonese|korean|"
    r"vietnamese|russian|arabic|portuguese|italian|tagalog|hindi|polish|somali|amharic|ukrainian|farsi|urdu)\b"
    r"(?![^?.!]{0,40}\b(?:members?|letters?|notices?|eobs?|denial\s+letters?|policy|polic(?:y|ies)|benefits?)\b)"
    r"|\bhow\s+do\s+(?:you|i)\s+say\b[^?.!]{0,60}\bin\s+[A-Z]?[a-z]+\s*\??$", _I)


def writes_or_translates_off_topic(question: str) -> bool:
    """Writing a social post, a card, a speech, or a message about something that is not the plan; or
    translating a sentence. Decided before the claim-action check: "translate 'your claim has been
    denied' into Japanese" quotes a claim word but asks for a translation."""
    if _NON_PLAN_WRITING.search(question) or _TRANSLATE_TEXT.search(question):
        return True
    m = _DRAFT_MESSAGE.search(question)
    return bool(m) and not _BENEFIT.search(m.group("rest")) and not _SOMEONE_ELSE.search(m.group("rest"))


def off_topic_anyway(question: str) -> bool:
    """Creative writing, the staff member's own IT or workplace, general knowledge: out of scope even
    when the question uses plan words."""
    if _CREATIVE.search(question) or _GENERAL_KNOWLEDGE.search(question):
        return True
    if writes_or_translates_off_topic(question):
        return True
    if _OWN_EMPLOYMENT.search(question):
        return True
    staff_it = _STAFF_IT.search(question) or (_MY_IT.search(question) and _IT_TROUBLE.search(question))
    return bool(staff_it) and not (_SOMEONE_ELSE.search(question) and not _FIRST_PERSON.search(question))


def has_plan_vocabulary(question: str) -> bool:
    """Any health-plan word at all (plan, claim, member, provider, benefit, ...)."""
    return bool(_DOMAIN.search(question))


# This plan's coverage or rules asked about: "does the plan cover ...", "our plans", "we'll cover", "is X covered".
_THIS_PLAN = re.compile(
    r"\b(?:the|our|this|your)\s+plan(?:'s|s)?\b|\bour\s+(?:members?|polic(?:y|ies)|network|formulary|benefits?)\b"
    r"|\bwe(?:'ll|\s+will|\s+would|'d)?\s+(?:cover|pay|reimburse|allow|require|approve)\b"
    r"|\bcover(?:s|ed|age)?\b(?!\s+letters?)", _I)


# The benefit and claim words of the plan vocabulary, without the office ones ("letter", "notice",
# "supervisor", "network" as in "guest network") that workplace questions use too.
_BENEFIT = re.compile(
    r"\b(?:plans?|polic(?:y|ies)|claims?|members?|providers?|benefits?|cover(?:ed|age|s)?|appeals?|"
    r"authori[sz]ations?|auth|pre-?auth|pre-?cert\w*|referrals?|copays?|co-?pays?|coinsurance|deductibles?|"
    r"out-of-pocket|premiums?|(?:in|out-of)-?network|formular(?:y|ies)|pharmacy|prescriptions?|eligib\w*|"
    r"enroll\w*|timely\s+filing|filing\s+limits?|denials?|denied|grievances?|eob|explanation\s+of\s+benefits|"
    r"cob|subscribers?|dependents?|medicare|medicaid|cpt|hcpcs|icd-?10|modifiers?|billing|billed|reimburs\w*|"
    r"adjudicat\w*|pcp|specialists?|telehealth|dme|utilization|exclusions?|waiting\s+period|cobra|hsa|fsa|hra|"
    r"date\s+of\s+service|prior\s+auth\w*|visits?|newborns?|births?|adoptions?|qualifying\s+(?:life\s+)?events?|"
    r"special\s+enrollment)\b(?!\s+letters?)", _I)


def asks_about_this_plan(question: str) -> bool:
    """Framed as this plan's coverage, benefits or rules ("does the plan cover ...", "what's the
    out-of-pocket max", "copay for acupuncture"): a learned out-of-scope guess needs more."""
    return bool(_THIS_PLAN.search(question) or _BENEFIT.search(question))


def is_out_of_scope(question: str, other_payers: Sequence[str] | None = None) -> bool:
    """Clinical advice, another payer's rules, shopping for insurance, or off-topic words and no
    health-plan vocabulary at all."""
    clinical = _CLINICAL_ADVICE.search(question) or _WHERE_FOR_CARE.search(question) or _CLINICAL_CATEGORY.search(
        question) or (
        _SPECULATION.search(question) and _CLINICAL_SIGN.search(question))
    if clinical and not _COVERAGE.search(question) and not _RESPONSE_FRAME.search(question):
        return True
    if _LEGAL_ADVICE.search(question):
        return True
    if _PLAN_SHOPPING.search(question) or asks_about_other_payer(question, other_payers):
        return True
    if off_topic_anyway(question):
        return True
    if _DOMAIN.search(question):
        return False
    return any(p.search(question) for p in _OFF_TOPIC)
