"""Reads an OSCAL component-definition document (JSON) on standard input with compliance-trestle's
pydantic models of OSCAL, an implementation of the standard independent of ours, and prints what it
found as JSON: per component its title, type and properties, and per control implementation its
source and the control ids it implements. Exits non-zero (with trestle's error) when the document
is not valid OSCAL.

Usage: python3 check_component_definition.py < document.json
"""

import json

from trestle.oscal.component import ComponentDefinition

from oscal_stdin import plain, read


document = read(ComponentDefinition, "component-definition")

components = []
for component in document.components or []:
    components.append(
        {
            "title": component.title,
            "type": plain(component.type),
            "props": {plain(p.name): p.value for p in component.props or []},
            "implementations": [
                {
                    "source": implementation.source,
                    "controlIds": [plain(r.control_id) for r in implementation.implemented_requirements],
                }
                for implementation in component.control_implementations or []
            ],
        }
    )
print(json.dumps({"components": components}))
