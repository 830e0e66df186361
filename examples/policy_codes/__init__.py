"""Worked example of the extension point (docs/extending.md): installed by nothing, tested by the suite.

- `PolicyCodeRetriever`: exact match on the plan's own codes ("POL-TF", "PA-104", "§ 3.2"),
  which embeddings handle poorly; joins the built-in arms in the same reciprocal rank fusion.
- `CrossReferencePostprocessor`: follows a code named inside a context chunk ("see PA-104") to
  the chunk whose section heading names it.

Both read only through their `ComponentContext`, so under the caller's clearance. Register them:

    POLICYDESK_RETRIEVERS='[{"name": "policy_codes", "factory": "examples.policy_codes:PolicyCodeRetriever",
                             "options": {"pattern": "[A-Z]{2,4}-\\\\d{2,4}|§\\\\s*\\\\d+(?:\\\\.\\\\d+)*"}}]'
    POLICYDESK_POSTPROCESSORS='[{"name": "cross_references",
                                 "factory": "examples.policy_codes:CrossReferencePostprocessor",
                                 "options": {"pattern": "..."}}]'
"""

from examples.policy_codes.postprocessor import CrossReferencePostprocessor
from examples.policy_codes.retriever import PolicyCodeRetriever

__all__ = ["PolicyCodeRetriever", "CrossReferencePostprocessor"]
