"""Who is asking: staff accounts and roles, the clearance a role grants, web sessions, single
sign-on, API tokens, and the sign-in and per-token rate limits; what the admin pages do to
accounts and tokens, each with its audit row (`admin`).

Owns the mapping from a stored role to a `Clearance` (`access.clearance_for`), re-read on every
request. It imports `storage` only; `config` validates roles against it, and the pipeline, web, CLI and
entry points import it to resolve the caller.
"""
