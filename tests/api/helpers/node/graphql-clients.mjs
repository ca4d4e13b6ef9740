// Three GraphQL client libraries nobody here wrote, with the settings that make them send
// queries as GET: urql (its default `preferGetMethod: 'within-url-limit'`), Apollo
// Client (`useGETForQueries`) and graphql-request (`method: 'GET'`). Each runs the same query
// and a query naming an unknown field; fetch is wrapped to record the HTTP method each used.
// Usage: node graphql-clients.mjs URL TOKEN. Prints one JSON object; tests/api/graphql_clients.rs
// compares it with the REST answers.

import { Client, fetchExchange, gql as urqlGql } from '@urql/core';
import apollo from '@apollo/client/core/core.cjs';
import { GraphQLClient, gql } from 'graphql-request';

const [url, token] = process.argv.slice(2);
const headers = { authorization: `Bearer ${token}` };

const QUERY = `query Delayed {
  records(slug: "flights", filters: [{field: "carrier", value: "UA"}, {field: "dep_delay", op: GTE, value: "60"}],
          sort: [{field: "dep_delay", order: DESC}, {field: "_id"}], perPage: 3, fields: ["carrier", "dep_delay"]) {
    total
    records
  }
  agg(slug: "flights", groupBy: ["origin"], field: "dep_delay", limit: 2) {
    totalGroups
    groups { key stats { count avg } }
  }
}`;
const BAD = `query Bad { records(slug: "flights", filters: [{field: "nope", value: "1"}]) { total } }`;

function recording() {
  const methods = [];
  const fetcher = (input, init = {}) => {
    methods.push((init.method || 'GET').toUpperCase());
    return fetch(input, init);
  };
  return { methods, fetcher };
}

function firstCode(errors) {
  const list = errors?.graphQLErrors ?? errors?.response?.errors ?? errors ?? [];
  const first = Array.isArray(list) ? list[0] : undefined;
  return first?.extensions?.code ?? null;
}

async function withUrql() {
  const { methods, fetcher } = recording();
  const client = new Client({
    url,
    exchanges: [fetchExchange],
    fetch: fetcher,
    fetchOptions: { headers },
    preferGetMethod: 'within-url-limit',
  });
  const ok = await client.query(urqlGql(QUERY), {}).toPromise();
  const bad = await client.query(urqlGql(BAD), {}).toPromise();
  return { methods, data: ok.data, error: ok.error?.message ?? null, badCode: firstCode(bad.error?.graphQLErrors) };
}

async function withApollo() {
  const { methods, fetcher } = recording();
  const client = new apollo.ApolloClient({
    link: new apollo.HttpLink({ uri: url, fetch: fetcher, headers, useGETForQueries: true }),
    cache: new apollo.InMemoryCache(),
    defaultOptions: { query: { fetchPolicy: 'no-cache', errorPolicy: 'all' } },
  });
  const ok = await client.query({ query: apollo.gql(QUERY) });
  const bad = await client.query({ query: apollo.gql(BAD) });
  return { methods, data: ok.data, error: ok.error?.message ?? null, badCode: firstCode(bad.errors) };
}

async function withGraphqlRequest() {
  const { methods, fetcher } = recording();
  const client = new GraphQLClient(url, { method: 'GET', headers, fetch: fetcher });
  const data = await client.request(gql`${QUERY}`);
  let badCode = null;
  try {
    await client.request(gql`${BAD}`);
  } catch (e) {
    badCode = firstCode(e.response?.errors);
  }
  return { methods, data, error: null, badCode };
}

const out = {
  urql: await withUrql(),
  apollo: await withApollo(),
  graphqlRequest: await withGraphqlRequest(),
};
console.log(JSON.stringify(out));
