"""Reads an OSCAL assessment-results document (JSON) on standard input with compliance-trestle's
pydantic models of OSCAL, an implementation of the standard independent of ours, and prints what
it found as JSON: each finding's target and state with the observations it relates, and each
observation's methods and evidence links. Exits non-zero (with trestle's error) when the document
is not valid OSCAL, or when a finding relates an observation the document does not hold.

Usage: python3 check_assessment_results.py < document.json
"""

import json
import sys

from trestle.oscal.assessment_results import AssessmentResults

from oscal_stdin import plain, read


document = read(AssessmentResults, "assessment-results")

result = document.results[0]
observations = {str(o.uuid): o for o in (result.observations or [])}
findings = []
for finding in result.findings or []:
    related = [str(r.observation_uuid) for r in (finding.related_observations or [])]
    missing = [uuid for uuid in related if uuid not in observations]
    if missing:
        sys.exit(f"finding {finding.uuid} relates observations the document lacks: {missing}")
    findings.append(
        {
            "targetId": finding.target.target_id,
            "title": finding.target.title,
            "state": finding.target.status.state.value,
            "reason": getattr(finding.target.status.reason, "value", finding.target.status.reason),
            "observations": [
                {
                    "methods": [getattr(m, "value", m) for m in observations[uuid].methods],
                    "hrefs": [e.href for e in (observations[uuid].relevant_evidence or [])],
                    "collected": observations[uuid].collected.isoformat(),
                    "subjects": [
                        {"title": s.title, "type": plain(s.type), "remarks": plain(s.remarks)}
                        for s in (observations[uuid].subjects or [])
                    ],
                }
                for uuid in related
            ],
        }
    )
print(
    json.dumps(
        {
            "title": document.metadata.title,
            "start": result.start.isoformat(),
            "observations": len(observations),
            "findings": findings,
        }
    )
)
