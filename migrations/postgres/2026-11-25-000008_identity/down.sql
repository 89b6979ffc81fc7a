DROP TABLE invitations;
DROP TABLE sign_in_attempts;
DROP TABLE user_identities;
