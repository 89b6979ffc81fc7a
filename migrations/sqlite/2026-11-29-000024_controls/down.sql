DROP TABLE evidence;
DROP TABLE control_evidence_sources;
DROP TABLE controls;
