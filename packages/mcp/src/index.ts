/** @airlock/mcp: an MCP server whose tools run on an Airlock session, over stdio or streamable HTTP. */
export { AirlockMcpServer, AIRLOCK_MCP_VERSION, type AirlockMcpServerOptions } from './airlock-mcp-server.js';
export { runStdioServer, type StdioServerOptions } from './stdio-server.js';
export { McpHttpEndpoint, type McpHttpEndpointOptions } from './http-endpoint.js';
export { loopbackFetch } from './loopback-fetch.js';
export { leaseSession, type SessionChoice, type SessionLease } from './session-lease.js';
export { SessionCalls, type CallOutcome, type CallRefusal } from './session-calls.js';
export { TOOL_ARGUMENTS, TOOL_DESCRIPTIONS, listedTools, type AirlockToolName, type ToolInput } from './tool-definitions.js';
export { globToRegExp, findPathPattern } from './glob-pattern.js';
