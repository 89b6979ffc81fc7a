// A real OpenID provider (the npm package oidc-provider) on loopback, for the sign-in tests.
//
// Usage: node provider.mjs <port> <config JSON>
//   config: { "clients": [{ "client_id", "client_secret", "redirect_uris": [...] }] }
// Prints "ready <issuer>" on stdout once it listens. Login and consent are the package's own
// development interactions (HTML forms at /interaction/<uid>), which the tests post to over HTTP:
// any password is accepted for the accounts below.
import Provider from 'oidc-provider';

const [port, configText] = process.argv.slice(2);
const config = JSON.parse(configText);
const issuer = `http://127.0.0.1:${port}`;

// The people the provider knows: `login` is what the login form takes.
const accounts = {
  ada: { email: 'ada@acme.test', email_verified: true, name: 'Ada Lovelace', picture: 'https://pictures.acme.test/ada.png' },
  bob: { email: 'bob@acme.test', email_verified: false, name: 'Bob Unverified' },
  // the real owner of bob@acme.test, whose provider verified it
  'bob-owner': { email: 'bob@acme.test', email_verified: true, name: 'Bob Owner' },
  cy: { email: 'cy@acme.test', email_verified: true, name: 'Cy Verified' },
  dee: { email: 'dee@acme.test', email_verified: true, name: 'Dee Verified' },
};

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    ...client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'picture'] },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...account }; } };
  },
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  cookies: { keys: ['compliance-tests-only-cookie-key'] },
});

const server = provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
