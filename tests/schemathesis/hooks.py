"""schemathesis hooks for `cargo xtask schemathesis` (loaded through SCHEMATHESIS_HOOKS).

References to data in bodies: `schemathesis.toml` overrides them under `[parameters]`, but the
coverage phase builds some bodies from the document's examples and defaults without the overrides
(`"assigneeId": "mem_01jd0000…"`, a member nobody is). Positive cases get the real references
here too, whatever phase made them; negative cases keep what was generated.

An `Idempotency-Key` makes a repeat of the same request answer the first answer, and the same key
with another request a 422: a generated key that the run sends again with another body (the
coverage phase repeats its boundary values across cases) is rightly refused. Positive cases go
without one; negative cases keep theirs (a malformed key must be refused with 400).
tests/api/idempotency.rs covers keys with real repeats.

Sessions: the chat history and the list of one's sessions belong to a signed-in user, and an API
key is refused there with 403. Those operations are sent with the run's session (the
`session_token` cookie, `SCHEMATHESIS_SESSION`) and the organization instead of the key.

A list's `cursor` is opaque and bound to the exact query it was issued for (the list, its
filters, its sort and its search), so no generated value can be a valid one: the server rightly
answers a well-formed but made-up cursor with a 400 naming `cursor`. Positive cases therefore go
without a cursor, and the rest of their query is checked strictly; negative cases keep theirs and
must still be refused. tests/api/pagination.rs and tests/api/filters.rs page with cursors the
server issued, and refuse made-up ones.

A consistency proof goes from a smaller tree to a larger one: `from` above `to` is each
schema-valid and together refused with a 400 naming `from` (a rule across two parameters the
document cannot state). Positive cases therefore ask with the two in order; negative cases keep
theirs. tests/api/audit_proofs.rs checks the refusal.
"""

import os

import schemathesis
from schemathesis.core.parameters import ParameterLocation

# Body fields that name data of the run's organization, and the variable xtask sets for each.
REFERENCES = {
    "assigneeId": "SCHEMATHESIS_MEMBER_ID",
    "approverId": "SCHEMATHESIS_MEMBER_ID",
    "ownerId": "SCHEMATHESIS_MEMBER_ID",
    "userId": "SCHEMATHESIS_USER_ID",
    "taskId": "SCHEMATHESIS_TASK_ID",
}


@schemathesis.hook
def map_case(context, case):
    body_negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.BODY)
    if isinstance(case.body, dict) and not body_negative:
        for field, variable in REFERENCES.items():
            if isinstance(case.body.get(field), str) and variable in os.environ:
                case.body[field] = os.environ[variable]
                if case.meta is not None:
                    case.meta.mark_dirty(ParameterLocation.BODY)
    headers = case.headers
    header_negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)
    if headers and "Idempotency-Key" in headers and not header_negative:
        del headers["Idempotency-Key"]
        if case.meta is not None:
            case.meta.mark_dirty(ParameterLocation.HEADER)
    query = case.query
    negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.QUERY)
    if query and "cursor" in query and not negative:
        del query["cursor"]
        if case.meta is not None:
            case.meta.mark_dirty(ParameterLocation.QUERY)
    if query and not negative and in_wrong_order(query.get("from"), query.get("to")):
        query["from"], query["to"] = query["to"], query["from"]
        if case.meta is not None:
            case.meta.mark_dirty(ParameterLocation.QUERY)
    return case


def in_wrong_order(low, high):
    """Whether two tree sizes are whole numbers with the first above the second."""
    try:
        return int(low) > int(high)
    except (TypeError, ValueError):
        return False


# Operations only a session may call (an API key is refused with 403).
SESSION_ONLY = {"getChatHistory", "replaceChatHistory", "clearChatHistory", "listSessions", "deleteSession"}


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.definition.raw.get("operationId") not in SESSION_ONLY:
        return
    token = os.environ.get("SCHEMATHESIS_SESSION")
    if not token:
        return
    for headers in (case.headers, kwargs.get("headers")):
        if headers is not None:
            headers.pop("X-API-Key", None)
            headers["Cookie"] = f"session_token={token}"
            headers["X-Organization-Id"] = os.environ["SCHEMATHESIS_ORG_ID"]
