DROP TABLE requirement_applicability;
