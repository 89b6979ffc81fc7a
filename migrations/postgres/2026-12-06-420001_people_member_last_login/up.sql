-- Issue 42: a member's lastLogin is the organization's own (the last session that came to it),
-- no longer the user's sign-in anywhere. Empty until the member's next session here.
ALTER TABLE members ADD COLUMN last_login TIMESTAMP;
