"""Policy-like filler text from templates, for the realistic scale filler.

The noisy-copy filler (`scale.insert_filler(..., filler="noisy")`) puts 80-800 near-identical
vectors around each demo chunk: tight clusters that no real corpus has. This module writes
section-like chunks the way a health plan's policies, wiki pages and call notes read (a heading,
then three to six sentences on one topic and one aspect, with numbers, settings and codes
drawn at random), so that the embedding model spreads them as it would spread real text: near
each other by topic, never as copies.

Nothing here names a demo document, section or identifier; the topics are generic health-plan
subjects. The same seed always gives the same texts in the same order, and the first n texts
do not depend on how many are asked for (a 10^4 filler is the prefix of a 10^5 one).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Iterator

# Bumped whenever the templates or vocabulary change: cached vectors are keyed by it.
GENERATOR_VERSION = 1

TOPICS = (
    "durable medical equipment", "skilled nursing facility stays", "ground ambulance transport",
    "air ambulance transport", "home health visits", "outpatient physical therapy", "occupational therapy",
    "speech therapy", "genetic testing", "bariatric surgery", "sleep studies", "hearing aids",
    "routine vision exams", "dental anesthesia", "home infusion therapy", "outpatient dialysis",
    "hospice care", "organ transplant evaluation", "out-of-network emergency care", "telehealth visits",
    "specialty drugs", "step therapy", "inpatient admissions", "observation stays", "urgent care visits",
    "behavioral health counseling", "substance use treatment", "applied behavior analysis",
    "chiropractic care", "acupuncture", "allergy testing", "advanced imaging", "cardiac rehabilitation",
    "pulmonary rehabilitation", "wound care supplies", "ostomy supplies", "diabetic testing supplies",
    "insulin pumps", "continuous glucose monitors", "prosthetic limbs", "orthotic braces",
    "cochlear implants", "fertility evaluation", "maternity care", "newborn coverage", "well-child visits",
    "preventive screenings", "immunizations", "colorectal cancer screening", "mammography",
    "chemotherapy administration", "radiation therapy", "clinical trial routine costs",
    "non-emergency medical transportation", "interpreter services", "provider credentialing",
    "claims reprocessing", "coordination of benefits", "subrogation recovery", "member enrollment changes",
    "premium billing", "overpayment recovery", "provider directory updates", "member grievances",
    "pharmacy network access", "mail-order pharmacy", "compound medications", "vaccine administration fees",
    "lab services", "pathology services", "anesthesia billing", "assistant surgeon claims",
    "multiple procedure reductions", "modifier use", "bundled services", "readmission review",
)

ASPECTS = (
    "Scope", "Coverage criteria", "Prior authorization", "Limits", "Documentation", "Exclusions",
    "Billing and coding", "Timelines", "Appeals", "Member cost sharing", "Provider responsibilities",
    "Exceptions", "Definitions", "Audit and review", "Call handling",
)

ACTORS = (
    "the member", "the treating provider", "the ordering physician", "the facility", "the pharmacy",
    "the utilization management nurse", "the medical director", "the claims examiner",
    "the member services representative", "the case manager", "the billing office",
    "the network management team", "the appeals coordinator", "the primary care provider",
)
SETTINGS = (
    "an inpatient setting", "an outpatient hospital department", "a physician office", "the member's home",
    "an ambulatory surgery center", "a skilled nursing facility", "an independent laboratory",
    "a freestanding imaging center", "a retail pharmacy", "a telehealth platform",
)
DOCUMENTS = (
    "a letter of medical necessity", "the itemized bill", "operative notes", "a signed order",
    "progress notes from the last 60 days", "the discharge summary", "a certificate of medical necessity",
    "proof of timely filing", "the explanation of benefits", "a treatment plan with measurable goals",
    "the referral form", "delivery confirmation", "a completed authorization request",
    "the primary payer's remittance advice", "lab results from the last 90 days",
)
PRODUCTS = ("commercial", "individual market", "Medicare Advantage", "Medicaid managed care",
            "employer group", "dual-eligible")
UNITS = ("visits", "units", "hours of service", "sessions", "days of supply", "treatments")
PERIODS = ("calendar days", "business days", "weeks", "months")
OUTCOMES = ("approved", "pended for review", "denied", "returned to the provider", "adjusted",
            "sent to medical review", "closed as a duplicate")
TEAMS = ("Utilization Management", "Claims Operations", "Provider Services", "Member Services",
         "Pharmacy Services", "Appeals and Grievances", "Quality Improvement", "Payment Integrity",
         "Enrollment and Billing", "Care Management")
CHANNELS = ("the provider portal", "fax", "mail", "the member portal", "a recorded phone line",
            "electronic data interchange", "secure email")

# Sentence templates, by aspect; {topic} is the chunk's topic, the other slots are drawn.
SENTENCES: dict[str, tuple[str, ...]] = {
    "Scope": (
        "This section applies to {topic} for {product} members.",
        "It describes how the plan reviews and pays for {topic} furnished in {setting}.",
        "Services covered under a separate rider are not addressed here.",
        "{team} maintains this guidance and reviews it every {n12} months.",
    ),
    "Coverage criteria": (
        "{topic} is covered when {actor} documents medical necessity and the service is delivered in {setting}.",
        "The member must have tried a less intensive option for at least {n2} {period} before {topic} is considered.",
        "Coverage requires that the service is ordered by a licensed provider acting within the scope of practice.",
        "Requests that do not meet the criteria are sent to {actor} for review.",
        "A diagnosis confirmed within the last {n12} months is required.",
    ),
    "Prior authorization": (
        "Prior authorization is required for {topic} before the first date of service.",
        "{actor} submits the request through {channel} with {document}.",
        "Standard requests are decided within {n2} {period}; urgent requests within {h} hours.",
        "An approved authorization is valid for {n12} months and covers up to {m} units.",
        "Retroactive authorization is allowed only when the member was admitted through the emergency department.",
        "If the request is incomplete it is {outcome} and {actor} is notified by {channel}.",
    ),
    "Limits": (
        "The plan covers up to {m} {unit} of {topic} per benefit year.",
        "Additional {unit} need a new review by {actor}.",
        "Replacement is covered once every {months} months unless the item is lost or damaged beyond repair.",
        "Rental converts to purchase after {months} months of continuous use.",
        "The limit is shared across all network providers and resets on January 1.",
    ),
    "Documentation": (
        "The record must include {document} and {document2}.",
        "{actor} keeps the documentation for at least {years} years.",
        "Missing documentation causes the claim to be {outcome}.",
        "Handwritten orders must be legible and signed; stamped signatures are not accepted.",
        "Documentation is requested by {channel} and is due within {n2} {period}.",
    ),
    "Exclusions": (
        "{topic} for cosmetic purposes is not covered.",
        "Services provided by a family member of the patient are excluded.",
        "Experimental or investigational uses are excluded unless part of an approved clinical trial.",
        "Convenience items and duplicate equipment are not covered under any product.",
        "Charges after the member's coverage end date are denied.",
    ),
    "Billing and coding": (
        "Bill {topic} with procedure code {code} and the matching diagnosis code.",
        "Claims must be submitted within {n} days of the date of service through {channel}.",
        "Use modifier {modifier} when the service is repeated on the same day.",
        "One unit equals {n15} minutes of direct service.",
        "Claims billed without the authorization number are {outcome}.",
        "The allowed amount is {pct}% of the fee schedule when billed by a non-physician practitioner.",
    ),
    "Timelines": (
        "{team} acknowledges a request within {n2} {period} of receipt.",
        "A decision is sent to {actor} within {n2} {period}.",
        "If more information is needed the deadline extends by {n2} {period} and {actor} is told why.",
        "Clock starts on the day the complete request is received, not the day it is opened.",
        "Expedited cases are decided within {h} hours of receipt.",
    ),
    "Appeals": (
        "{actor} may appeal a denial of {topic} within {n} days of the notice.",
        "Appeals are filed through {channel} or in writing to {team}.",
        "A reviewer who did not make the first decision handles the appeal.",
        "Expedited appeals are decided within {h} hours when delay could seriously harm the member.",
        "If the denial is upheld the notice explains the right to an external review.",
    ),
    "Member cost sharing": (
        "The member pays a ${dollars} copayment per visit for {topic} on the {product} plan.",
        "Coinsurance of {pct}% applies after the deductible.",
        "Out-of-network services cost the member {pct2}% of the allowed amount.",
        "Cost sharing does not apply to preventive services delivered in network.",
        "The out-of-pocket maximum of ${big} caps the member's share for the year.",
    ),
    "Provider responsibilities": (
        "{actor} verifies eligibility on {channel} before each visit.",
        "Network providers may not bill the member for amounts above the allowed amount.",
        "{actor} notifies {team} within {n2} {period} of an admission.",
        "Providers must hold an active license and current credentialing to be paid.",
        "A provider who changes address updates the directory within {n} days.",
    ),
    "Exceptions": (
        "{team} may grant an exception when the member has no network provider within {miles} miles.",
        "Continuity of care allows a new member to keep an out-of-network provider for {n} days.",
        "An exception request is decided within {n2} {period} and documented in the case record.",
        "Emergencies are never subject to the authorization requirement.",
    ),
    "Definitions": (
        "Date of service means the day {topic} is furnished to the member.",
        "Medically necessary means appropriate, evidence based and not primarily for convenience.",
        "A clean claim is one with every required field and no defect needing more information.",
        "Benefit year means the twelve months starting on the plan's renewal date.",
        "Network provider means a provider under contract with the plan on the date of service.",
    ),
    "Audit and review": (
        "{team} audits a sample of {n} claims for {topic} each quarter.",
        "Overpayments found in audit are recovered within {n2} days of notice.",
        "Providers with an error rate above {pct}% are placed on prepayment review.",
        "Audit results are reported to the compliance committee every {n12} months.",
    ),
    "Call handling": (
        "When a caller asks about {topic}, confirm the member's identity and plan first.",
        "Check the authorization status on {channel} before answering.",
        "Do not quote a payment amount over the phone; refer the caller to the explanation of benefits.",
        "If the caller disputes a denial, explain the appeal rights and the {n}-day deadline.",
        "Document the call reason and the answer given in the contact record.",
        "Transfer clinical questions to {team}.",
    ),
}

HEADINGS = ("Section {s}.{t} {aspect}: {topic}{qualifier}", "{Topic}{qualifier}: {aspect}",
            "{s}.{t} {aspect} for {topic}{qualifier}", "{Topic} - {aspect}")
QUALIFIERS = ("", "", "", " for children under 18", " for members over 65", " in rural areas",
              " after a hospital discharge", " for dual-eligible members", " during a transition of care",
              " for members in a care management program", " at out-of-network facilities",
              " for members with a chronic condition", " during a public health emergency")
TITLES = {
    "policy": ("{Topic} Policy", "{Topic} Coverage Guideline", "{Topic} Payment Policy", "{Topic} Medical Policy",
               "Reimbursement Policy: {Topic}", "{Topic} Utilization Review Policy"),
    "wiki": ("{Topic} FAQ", "{Topic} Quick Reference", "Working {topic} requests", "{Topic} Tips for the Desk"),
    "call_note": ("Call note - {topic} question", "Call note - {topic} claim", "Call note - {topic} complaint"),
}
NOTE_OPENERS = (
    "A provider office called about {topic}.",
    "A member called to ask whether {topic} is covered.",
    "A caller from {place} asked about a claim for {topic}.",
    "A member's daughter called about {topic} for her mother.",
)
CALLER_PLACES = ("a hospital billing office", "a home health agency", "a pharmacy", "a skilled nursing facility",
                 "a physician practice", "a durable equipment supplier", "a laboratory")
NOTE_ASPECTS = ("Call handling", "Prior authorization", "Appeals", "Member cost sharing",
                "Billing and coding", "Limits")
MODIFIERS = ("59", "76", "77", "25", "XU", "RT", "LT", "GT", "95", "KX")


VERSION_P = (0.5, 0.3, 0.2)  # policies with 1, 2, 3 versions, as the noisy-copy filler


@dataclass(frozen=True)
class FillerDoc:
    """One synthetic source: its kind, topic, and each version's section texts."""
    source_type: str  # policy, wiki or call_note
    topic: str
    title: str
    versions: tuple[tuple[str, ...], ...]


# Values a slot is drawn from (besides {topic}, the chunk's own).
SLOTS: dict[str, tuple] = {
    "actor": ACTORS, "setting": SETTINGS, "document": DOCUMENTS, "document2": DOCUMENTS, "product": PRODUCTS,
    "unit": UNITS, "period": PERIODS, "outcome": OUTCOMES, "team": TEAMS, "channel": CHANNELS,
    "modifier": MODIFIERS, "years": (3, 6, 7, 10), "months": (6, 12, 13, 24, 36, 60),
    "n": (3, 5, 7, 10, 14, 15, 30, 45, 60, 90, 120, 180, 365), "n2": (2, 3, 5, 7, 14, 30, 60),
    "n12": (3, 6, 12, 24), "n15": (15, 30, 60), "m": tuple(range(1, 61)), "h": (24, 48, 72),
    "pct": (5, 10, 15, 20, 25, 30, 40, 50), "pct2": (30, 40, 50, 60),
    "dollars": (0, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100), "big": tuple(f"{k * 1000:,}" for k in range(2, 10)),
    "miles": (15, 30, 50, 60, 100), "code": tuple(str(c) for c in range(10000, 100000, 7)),
}
def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


_FIELDS = {t: [f for _, f, _, _ in string.Formatter().parse(t) if f] for ts in SENTENCES.values() for t in ts}


class PolicyTextGenerator:
    """Deterministic synthetic documents. A later version of a policy keeps its sections and
    redraws the numbers and names of one sentence in one or two of them, as a real revision
    does: a document's versions are near-duplicates of each other, documents are not."""

    def __init__(self, seed: int = 17, sections: int = 4) -> None:
        self._rng = random.Random(seed)
        self._sections = sections

    def _pick(self, options):
        return options[self._rng.randrange(len(options))]

    def _sentence(self, aspect: str, topic: str, template: int) -> str:
        t = SENTENCES[aspect][template]
        s = t.format(topic=topic, **{f: self._pick(SLOTS[f]) for f in _FIELDS[t] if f != "topic"})
        return _cap(s)

    def _section(self, kind: str, topic: str, index: int) -> tuple[str, str, list[int], list[str]]:
        """(aspect, first line, template numbers, sentences) of one new section."""
        if kind == "call_note":
            head = self._pick(NOTE_OPENERS).format(topic=topic, place=self._pick(CALLER_PLACES))
            aspect = self._pick(NOTE_ASPECTS)
            count = self._rng.randint(2, 4)
        else:
            aspect = self._pick(ASPECTS)
            head = self._pick(HEADINGS).format(s=self._rng.randint(1, 11), t=index + 1, aspect=aspect,
                                               topic=topic, Topic=_cap(topic), qualifier=self._pick(QUALIFIERS))
            count = self._rng.randint(3, 6)
        templates = self._rng.sample(range(len(SENTENCES[aspect])), min(count, len(SENTENCES[aspect])))
        return aspect, head, templates, [self._sentence(aspect, topic, t) for t in templates]

    @staticmethod
    def _text(kind: str, head: str, sentences: list[str]) -> str:
        return " ".join([head, *sentences]) if kind == "call_note" else head + "\n\n" + " ".join(sentences)

    def document(self) -> FillerDoc:
        kind = self._rng.choices(("policy", "wiki", "call_note"), weights=(0.6, 0.25, 0.15))[0]
        topic = self._pick(TOPICS)
        title = self._pick(TITLES[kind]).format(topic=topic, Topic=_cap(topic))
        nver = self._rng.choices((1, 2, 3), weights=VERSION_P)[0] if kind == "policy" else 1
        sections = [self._section(kind, topic, i) for i in range(self._sections)]
        versions = [tuple(self._text(kind, h, ss) for _, h, _, ss in sections)]
        for _ in range(1, nver):
            for i in self._rng.sample(range(self._sections), self._rng.randint(1, 2)):
                aspect, head, templates, sentences = sections[i]
                j = self._rng.randrange(len(sentences))
                sentences = [*sentences[:j], self._sentence(aspect, topic, templates[j]), *sentences[j + 1:]]
                sections[i] = (aspect, head, templates, sentences)
            versions.append(tuple(self._text(kind, h, ss) for _, h, _, ss in sections))
        return FillerDoc(source_type=kind, topic=topic, title=title, versions=tuple(versions))


def documents(seed: int = 17, sections: int = 4) -> Iterator[FillerDoc]:
    """An endless, deterministic stream of synthetic documents."""
    gen = PolicyTextGenerator(seed, sections)
    while True:
        yield gen.document()


QUESTIONS = (
    "How long does a member have to appeal a denial of {topic}?",
    "Is prior authorization required for {topic}{qualifier}?",
    "How many {unit} of {topic} are covered per year?",
    "What documentation do we need for a {topic} claim?",
    "What does the member pay for {topic}?",
    "Is {topic} covered{qualifier}?",
    "Which code and modifier do I bill for {topic}?",
    "What is excluded from coverage for {topic}?",
    "How fast is a decision made on a request for {topic}?",
    "Can we make an exception for {topic} when there is no network provider nearby?",
    "A caller disputes a {topic} denial, what do I tell them?",
    "How often is {topic} audited?",
)


def questions(n: int, seed: int = 17) -> list[str]:
    """n questions a representative might ask about the filler's topics (the golden questions
    ask about the demo corpus's topics only)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q = QUESTIONS[rng.randrange(len(QUESTIONS))]
        out.append(q.format(topic=TOPICS[rng.randrange(len(TOPICS))], unit=UNITS[rng.randrange(len(UNITS))],
                            qualifier=QUALIFIERS[rng.randrange(len(QUALIFIERS))]))
    return out
