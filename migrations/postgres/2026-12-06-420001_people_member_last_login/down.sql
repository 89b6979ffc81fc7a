ALTER TABLE members DROP COLUMN last_login;
