DROP TABLE control_requirements;
