// undici's Agent without the rest of undici. Its one documented entry (`undici`, index.js) loads the
// whole library when imported: fetch, WebSocket, EventSource, the cache stores and interceptors, the mock
// agents. In the poller's bundle that was 526 KB and 40-50 ms of the cold start; what the client uses is
// about 290 KB (141 KB of it llhttp's WebAssembly as text, compiled at the first connection). Its share of
// the poller's init is measured by `npm run bench` (section 5, "poller init share").
// The client needs one class, Agent, and the `request()` method that index.js puts on
// every Dispatcher; this module loads those two from the files index.js itself loads them from and sets
// `request` as index.js does (the same function, so loading both entries is harmless). The other four
// Dispatcher methods index.js adds (stream, pipeline, upgrade, connect) are left out: the client never
// calls them, and loading their modules was part of every cold start.
//
// undici 7 has no `exports` map, so these paths resolve, but they are not a documented API: hence the
// exact version pin in package.json, and test/infra/lambda-bundle.test.ts, which sends a request through
// this Agent from a bundle of it alone and checks the poller's bundle holds none of fetch, WebSocket or
// the cache (nor undici's index.js: a value import of 'undici' anywhere in functions/ would bring it back).
import type { Agent as PublicAgent } from 'undici';
import request from 'undici/lib/api/api-request.js';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';

Dispatcher.prototype.request = request;

/** undici's Agent class itself (`=== require('undici').Agent`). */
export const Agent = AgentClass;
export type Agent = PublicAgent;
