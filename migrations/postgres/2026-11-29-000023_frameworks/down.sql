DROP TABLE requirements;
DROP TABLE frameworks;
