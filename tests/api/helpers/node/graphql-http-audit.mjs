// graphql-http's auditServer against a running odqs (tests/api/graphql_http_audit.rs): prints every
// audit's id, name, status (ok, notice, warn, error) and reason as JSON.
import { auditServer } from 'graphql-http';
const [url, token] = process.argv.slice(2);
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const results = await auditServer({ url, fetchFn });
const out = results.map((r) => ({ id: r.id, name: r.name, status: r.status, reason: r.reason }));
console.log(JSON.stringify(out));
