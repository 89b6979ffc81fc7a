// A real OpenID provider (the npm package oidc-provider) on loopback, for the sign-in tests.
//
// Usage: node provider.mjs
// Listens on a port the system picks and prints "listening <issuer>" on stdout. Then reads one
// line of config JSON from stdin, { "clients": [{ "client_id", "client_secret", "redirect_uris":
// [...] }] }, and prints "ready" once it serves as that issuer. Two steps because each side names
// the other: our server is started with the issuer, and its callback is known once it listens.
// Until then every request is answered 503. Login and consent are the package's own development
// interactions (HTML forms at /interaction/<uid>), which the tests post to over HTTP: any password
// is accepted for the accounts below.
import http from 'node:http';
import readline from 'node:readline';
import Provider from 'oidc-provider';

// The people the provider knows: `login` is what the login form takes.
const accounts = {
  ada: { email: 'ada@acme.test', email_verified: true, name: 'Ada Lovelace', picture: 'https://pictures.acme.test/ada.png' },
  bob: { email: 'bob@acme.test', email_verified: false, name: 'Bob Unverified' },
  // the real owner of bob@acme.test, whose provider verified it
  'bob-owner': { email: 'bob@acme.test', email_verified: true, name: 'Bob Owner' },
  cy: { email: 'cy@acme.test', email_verified: true, name: 'Cy Verified' },
  dee: { email: 'dee@acme.test', email_verified: true, name: 'Dee Verified' },
  kelvin: { email: 'kelvin@acme.test', email_verified: true, name: 'Kelvin' },
  // a look-alike of kelvin@acme.test: the KELVIN SIGN (U+212A), which lowercases to `k`
  'kelvin-look-alike': { email: '\u212Aelvin@acme.test', email_verified: true, name: 'Look-alike' },
};

const providerFor = (issuer, config) => new Provider(issuer, {
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

let handle = (request, response) => {
  response.statusCode = 503;
  response.end('the provider is not configured yet');
};
const server = http.createServer((request, response) => handle(request, response));
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`listening ${issuer}\n`);
  readline.createInterface({ input: process.stdin }).once('line', (line) => {
    handle = providerFor(issuer, JSON.parse(line)).callback();
    process.stdout.write('ready\n');
  });
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
