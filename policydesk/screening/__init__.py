"""What is refused before retrieval and what is screened before anything is stored: the refusal
gate (identifiers, claim actions, out of scope), its intent classifier, the per-role topic gate
and the terms it counts, the readable vocabulary (a question word no readable source uses), and
whether a question asks what changed.

It imports `detectors`, `storage`, `config`, `accounts`, `ops` (metrics, logs) and `providers`
(the embedding its classifier reads); never the pipeline, web or the synthesizers.
"""
