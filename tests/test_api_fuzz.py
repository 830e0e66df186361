"""Issue 19: Schemathesis fuzzes every /api/v1 operation from the API's own OpenAPI document,
with a compliance reviewer's valid token (so every handler is reached, not only the 401). Whatever
the input: never a 5xx, never a traceback, and every error is problem+json."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import date

import pytest
import schemathesis
from schemathesis import GenerationMode
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings as hypothesis_settings
from sqlalchemy.orm import Session

from policydesk.pipeline import build_pipeline
from policydesk.accounts.users import add_user
from policydesk.web.api import api_schema
from policydesk.web.app import create_app
from tests.api_helpers import bearer, make_token
from tests.web_helpers import PASSWORD

TODAY = date(2026, 11, 29)
MAX_EXAMPLES = 25  # per operation; each example is sent as generated and on real ids
STATS: Counter = Counter()


@pytest.fixture(scope="module")
def fuzz_app(settings, demo_db, embed_model):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    return create_app(settings.model_copy(update={"API_RATE_LIMIT": 1_000_000}), db=demo_db, pipeline=pipeline)


@pytest.fixture(scope="module")
def auth(fuzz_app, demo_db) -> dict:
    name = f"fuzz-api-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name=name, role="compliance", password=PASSWORD)
    token = make_token(demo_db, name)
    answer = TestClient(fuzz_app).post("/api/v1/ask", json={"question": "What is the timely filing limit?"},
                                       headers=bearer(token)).json()
    assert answer["citations"], answer  # a real answer, so fuzzed citation reads and checks have one
    return {"token": token, "trace_id": answer["trace_id"], "chunk_id": answer["citations"][0]["chunk_id"]}


@pytest.fixture(scope="module")
def schema(fuzz_app):
    loaded = schemathesis.openapi.from_dict(api_schema())
    loaded.app = fuzz_app
    return loaded


def _variants(case, auth: dict):
    """As generated; then on a real trace, chunk and document, so fuzzed input reaches the handler."""
    yield case
    path = case.path_parameters or {}
    real = {"trace_id": auth["trace_id"], "chunk_id": auth["chunk_id"], "doc_id": "POL-TF"}
    if path:
        case.path_parameters = {k: real.get(k, v) for k, v in path.items()}
        yield case


def test_schema_lists_every_api_operation(schema):
    operations = {(op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations()}
    assert operations == {("POST", "/api/v1/ask"), ("GET", "/api/v1/citations/{trace_id}/{chunk_id}"),
                          ("GET", "/api/v1/versions/{doc_id}"), ("GET", "/api/v1/traces"),
                          ("POST", "/api/v1/traces/{trace_id}/check"), ("POST", "/api/v1/feedback"),
                          ("POST", "/api/v1/sources/changed")}


def test_no_api_input_gets_a_server_error(schema, auth):
    # Driven directly: Schemathesis' pytest plugin reads Function._nodeid, which pytest 9 removed.
    # Positive cases follow the schema; negative ones break it (wrong types, unknown fields,
    # missing members), which the API must refuse as 422 problem+json, not crash on.
    runs = [(result.ok(), mode) for result in schema.get_all_operations() for mode in GenerationMode]
    for operation, mode in runs:

        @given(case=operation.as_strategy(generation_mode=mode))
        @hypothesis_settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                             suppress_health_check=list(HealthCheck))
        def call(case):
            for variant in _variants(case, auth):
                response = variant.call(headers=bearer(auth["token"]))
                STATS[(variant.method.upper(), variant.path, response.status_code)] += 1
                assert response.status_code < 500, (
                    f"{variant.method} {variant.formatted_path} {variant.body!r}: {response.status_code}\n"
                    f"{response.text[:800]}")
                assert "Traceback" not in response.text
                if response.status_code >= 400:
                    kind = {k.lower(): v for k, v in response.headers.items()}["content-type"]
                    kind = kind[0] if isinstance(kind, list) else kind
                    assert kind.startswith("application/problem+json"), response.text[:300]
                    assert response.json()["type"]

        call()
    total = sum(STATS.values())
    by_status = Counter()
    for (_, _, status), n in STATS.items():
        by_status[status] += n
    print(f"\nAPI fuzz: {total} requests over {len({(m, p) for m, p, _ in STATS})} operations; by status: "
          + ", ".join(f"{s}: {n}" for s, n in sorted(by_status.items())))
    assert total >= 2 * 5 * MAX_EXAMPLES
    assert any(s == 200 for (_, _, s) in STATS), "no fuzzed request was answered: the fuzzing never reached a handler"


# -- every problem is recorded, whatever the input -------------------------------------------------

from urllib.parse import quote  # noqa: E402

from hypothesis import strategies as st  # noqa: E402
from sqlalchemy import text  # noqa: E402

# Any character a JSON string can carry, NUL, controls and far planes included (not lone surrogates,
# which a client cannot send as UTF-8).
_ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=24)
_FIELDS = ("question", "date_of_service", "denial_notice_date", "line_of_business", "member_date", "trace_id",
           "verdict", "reason", "note")
_BODIES = st.dictionaries(st.one_of(st.sampled_from(_FIELDS), _ANY_TEXT),
                          st.one_of(_ANY_TEXT, st.integers(), st.none(), st.lists(_ANY_TEXT, max_size=2)), max_size=4)
_OPERATIONS = st.sampled_from([
    ("POST", "/api/v1/traces/{}/check"), ("GET", "/api/v1/citations/{}/x"), ("GET", "/api/v1/versions/{}"),
    ("GET", "/api/v1/traces?words={}&asked_from={}"), ("POST", "/api/v1/feedback"), ("POST", "/api/v1/ask"),
])


def _records(db, name: str) -> tuple[int, set[str]]:
    with db.owner.connect() as conn:
        audited = conn.execute(text("SELECT count(*) FROM audit_log WHERE actor = :a AND action = 'api_problem'"),
                               {"a": name}).scalar_one()
        traced = set(conn.execute(text("SELECT CAST(id AS text) FROM traces WHERE user_name = :a"),
                                  {"a": name}).scalars())
    return audited, traced


def test_every_refused_api_request_leaves_exactly_one_record(fuzz_app, demo_db):
    # A 403 or 422 problem is recorded once: as the failed trace it names (`trace_id`), or else as
    # one api_problem audit row. A NUL in a path used to make the audit insert fail and record nothing.
    name = f"fuzz-audit-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name=name, role="compliance", password=PASSWORD)
    headers = bearer(make_token(demo_db, name))
    client = TestClient(fuzz_app)
    seen: Counter = Counter()

    @given(operation=_OPERATIONS, value=_ANY_TEXT, body=_BODIES)
    @hypothesis_settings(max_examples=80, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))
    def call(operation, value, body):
        method, template = operation
        path = template.format(*[quote(value, safe="")] * template.count("{}"))
        audited, traced = _records(demo_db, name)
        r = client.request(method, path, json=body if method == "POST" else None, headers=headers)
        assert r.status_code < 500, (method, path, body, r.text[:300])
        after_audited, after_traced = _records(demo_db, name)
        new_traces = after_traced - traced
        seen[r.status_code] += 1
        if r.status_code in (403, 422):
            problem = r.json()
            if problem.get("trace_id"):
                assert (after_audited, new_traces) == (audited, {problem["trace_id"]}), (path, body, problem)
            else:
                assert (after_audited, new_traces) == (audited + 1, set()), (path, body, problem)
        elif r.status_code >= 400:
            assert after_audited == audited, (path, r.status_code)

    call()
    before = _records(demo_db, name)[0]
    assert client.post("/api/v1/traces/abc%00/check", json={"member_date": "2025-11-03"},
                       headers=headers).status_code == 422
    assert _records(demo_db, name)[0] == before + 1
    assert seen[422] >= 20, seen  # the fuzzing reached the validators, not only the router
