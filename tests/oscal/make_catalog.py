"""Prints an OSCAL catalog (JSON) built with compliance-trestle's pydantic models of OSCAL, an
implementation of the standard independent of ours: tests/api/frameworks.rs imports it.

The catalog: an ungrouped control `sc-7` (label `SC-7`) with an enhancement `sc-7.3` without a
statement; a group `ac` with control `ac-1` (label `AC-1`, a statement with two labelled items,
one with a sub-item) and its enhancement `ac-1.1` (label `AC-1(1)`); a group `more` whose nested
group `ac-x` holds control `ac-2`, without a label.

Usage: python3 make_catalog.py [TITLE]
"""

import sys
import uuid
from datetime import datetime, timezone

from trestle.oscal import OSCAL_VERSION
from trestle.oscal.catalog import Catalog, Control, Group1, Group2
from trestle.oscal.common import Metadata, Part, Property


def label(value, class_=None):
    return Property(name="label", value=value, class_=class_)


def item(part_id, item_label, prose, parts=None):
    return Part(id=part_id, name="item", props=[label(item_label)], prose=prose, parts=parts)


ac_1 = Control(
    id="ac-1",
    title="Access policy",
    props=[label("AC-1"), label("AC-01", class_="sp800-53a")],
    parts=[
        Part(
            id="ac-1_smt",
            name="statement",
            prose="The organization:",
            parts=[
                item("ac-1_smt.a", "a.", "writes an access policy;", [item("ac-1_smt.a.1", "1.", "and reviews it.")]),
                item("ac-1_smt.b", "b.", "names its owner."),
            ],
        ),
        Part(id="ac-1_gdn", name="guidance", prose="Guidance is not part of the requirement."),
    ],
    controls=[
        Control(
            id="ac-1.1",
            title="Automated review",
            props=[label("AC-1(1)")],
            parts=[Part(id="ac-1.1_smt", name="statement", prose="Review the policy automatically.")],
        )
    ],
)
ac_2 = Control(id="ac-2", title="Account management")
sc_7 = Control(
    id="sc-7",
    title="Boundary protection",
    props=[label("SC-7")],
    parts=[Part(id="sc-7_smt", name="statement", prose="Monitor the boundary.")],
    controls=[Control(id="sc-7.3", title="Access points", props=[label("SC-7(3)")])],
)

catalog = Catalog(
    uuid=str(uuid.uuid4()),
    metadata=Metadata(
        title=sys.argv[1] if len(sys.argv) > 1 else "Trestle test catalog",
        last_modified=datetime.now(timezone.utc),
        version="2.0",
        oscal_version=OSCAL_VERSION,
    ),
    # OSCAL's JSON schema has a group hold either groups (Group1) or controls (Group2).
    groups=[
        Group2(id="ac", title="Access control", controls=[ac_1]),
        Group1(id="more", title="More", groups=[Group2(id="ac-x", title="More access", controls=[ac_2])]),
    ],
    controls=[sc_7],
)

# trestle's own JSON writer of a top-level model: {"catalog": {...}}, OSCAL's names (kebab-case).
print(catalog.oscal_serialize_json(pretty=True))
