// Types for the three undici 7 files undici-agent.ts loads directly. They are the very objects undici's
// public entry exports (index.js re-exports them), so they take the public entry's types.
declare module 'undici/lib/dispatcher/agent.js' {
  const Agent: typeof import('undici').Agent;
  export default Agent;
}
declare module 'undici/lib/dispatcher/dispatcher.js' {
  const Dispatcher: typeof import('undici').Dispatcher;
  export default Dispatcher;
}
declare module 'undici/lib/api/api-request.js' {
  const request: import('undici').Dispatcher['request'];
  export default request;
}
