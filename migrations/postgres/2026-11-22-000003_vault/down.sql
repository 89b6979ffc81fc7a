DROP TABLE refresh_leases;
DROP TABLE oauth_states;
DROP TABLE vault_secrets;
