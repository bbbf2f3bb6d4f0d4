/** @airlock/mcp: an MCP server whose tools run on an Airlock session, over stdio or streamable HTTP. */
export { AirlockMcpServer, AIRLOCK_MCP_VERSION, type AirlockMcpServerOptions } from './airlock-mcp-server.js';
export { runStdioServer, type StdioServerOptions } from './stdio-server.js';
export { McpHttpEndpoint, RECONNECT_AFTER_MS, type McpHttpEndpointOptions } from './http-endpoint.js';
export { BoundedEventStore, DEFAULT_EVENT_RETENTION, type EventRetention } from './bounded-event-store.js';
export { parseJsonRpcBody, PARSE_ERROR, INVALID_REQUEST, MAX_MESSAGE_DEPTH, type ParsedBody, type JsonRpcBodyError } from './json-rpc-body.js';
export { loopbackFetch } from './loopback-fetch.js';
export { leaseSession, type SessionChoice, type SessionLease } from './session-lease.js';
export { SessionCalls, type CallOutcome, type CallRefusal } from './session-calls.js';
export { TOOL_ARGUMENTS, TOOL_DESCRIPTIONS, listedTools, type AirlockToolName, type ToolInput, type ListedTool } from './tool-definitions.js';
export { toolOutput, outputSchemaOf } from './tool-output-schemas.js';
export { checkToolCall, type CheckedToolCall } from './tool-call-request.js';
export { OutputProgress, type OutputProgressOptions, type OutputProgressUpdate } from './output-progress.js';
export { WorkspaceResources, DEFAULT_LISTING_LIMITS, MAX_RESOURCE_BYTES, type ListingLimits, type ResourceCalls } from './workspace-resources.js';
export { ResourceSubscriptions, type ResourceSubscriptionsOptions, type SubscriptionCalls } from './resource-subscriptions.js';
export { WORKSPACE_URI_TEMPLATE, uriOfSegments, segmentsOfUri, compareSegments, encodeCursor, decodeCursor } from './workspace-uri.js';
export { globToRegExp, findPathPattern } from './glob-pattern.js';
