DROP TABLE control_requirements;
ALTER TABLE requirements DROP COLUMN catalog_id;
