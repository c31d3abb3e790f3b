// A real OpenID provider for the single sign-on tests: node_modules/oidc-provider (pinned in
// package.json and package-lock.json) with its development sign-in pages, configured by the JSON file
// named on the command line (written by tests/oidc_provider.py):
//   {"port": 0, "client_id": "...", "client_secret": "...", "redirect_uris": ["..."],
//    "post_logout_redirect_uris": ["..."], "accounts": {"login": {"email": "...", "groups": ["..."]}}}
// Any password signs in as the login typed; the claims are those of that login in "accounts", read
// from the file at each sign-in (a test changes a user's groups by rewriting it).
// Prints "listening <issuer>" once it accepts connections.
import fs from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const server = http.createServer();
server.listen(config.port || 0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: config.client_id,
      client_secret: config.client_secret,
      redirect_uris: config.redirect_uris,
      post_logout_redirect_uris: config.post_logout_redirect_uris || [],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'RS256',
    }],
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    cookies: { keys: ['test-only-cookie-key'] },
    pkce: { required: () => true },
    async findAccount(ctx, id) {
      const accounts = JSON.parse(fs.readFileSync(process.argv[2], 'utf8')).accounts || {};
      const account = accounts[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            sub: id,
            email: account.email,
            email_verified: account.email_verified !== false,
            name: account.name || id,
            preferred_username: id,
            groups: account.groups || [],
          };
        },
      };
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`listening ${issuer}\n`);
});
