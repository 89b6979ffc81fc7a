"""schemathesis hooks for `cargo xtask schemathesis` (loaded through SCHEMATHESIS_HOOKS).

A list's `cursor` is opaque and bound to the exact query it was issued for (the list, its
filters, its sort and its search), so no generated value can be a valid one: the server rightly
answers a well-formed but made-up cursor with a 400 naming `cursor`. Positive cases therefore go
without a cursor, and the rest of their query is checked strictly; negative cases keep theirs and
must still be refused. tests/api/pagination.rs and tests/api/filters.rs page with cursors the
server issued, and refuse made-up ones.
"""

import schemathesis
from schemathesis.core.parameters import ParameterLocation


@schemathesis.hook
def map_case(context, case):
    query = case.query
    negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.QUERY)
    if query and "cursor" in query and not negative:
        del query["cursor"]
        if case.meta is not None:
            case.meta.mark_dirty(ParameterLocation.QUERY)
    return case
