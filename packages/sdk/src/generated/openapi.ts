/**
 * Generated from the Airlock server's OpenAPI document by
 * packages/runtime/scripts/generate-sdk-types.ts. Do not edit by hand:
 * change the server's schemas and run `npm run generate:sdk-types`.
 */
/* eslint-disable */
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** liveness */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics in the text exposition format (an admin or a metrics token; `serve --metrics-listen` serves them without one) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description the exposition */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/plain": string;
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** this document */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list approvals (state=pending for open ones) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ApprovalList"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** get an approval; waitSeconds long-polls for its outcome */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Approval"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/{id}/approve": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** approve: the call runs once */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Approval"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/{id}/deny": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** deny: the call never runs */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Approval"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** server-sent events: approval.requested, approval.decided */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit/system/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** every record of the system chain, then its head signed with the audit key, as JSON lines; admin only */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description JSON lines */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/x-ndjson": string;
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit/system/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** verify the system chain (token, tenant and secret records; sessionId is empty), admin only */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AuditVerification"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** verify every chain: the system chain, every session, and every chain the head file outside the database names (those the database lost are listed in missing); admin only */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AuditReport"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** server-sent events: session.changed (session view), approval.changed (approval), audit.appended (records, with sessionId only), stream.ready, stream.resync; heartbeat comments every 15 s */
        get: {
            parameters: {
                query?: {
                    sessionId?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/images": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list images */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ImageList"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/images/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        /** get an image */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    name: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Image"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** console login: exchanges the API token for an HttpOnly, SameSite=Strict login cookie and the CSRF token to send as X-Airlock-CSRF */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        token: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Login"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** end the console login of the cookie and clear the cookie */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/nodes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the nodes sharing the store: address, state (active, draining, left, lost), sessions held, last heartbeat */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["NodeList"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/nodes/{id}/drain": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** drain a node: it suspends its sessions, which resume on other nodes at their next call; a restart makes it active again */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Node"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/secrets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list secrets the egress gateway injects: names, sizes and dates, never values */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/secrets/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        get?: never;
        /** store a secret (encrypted at rest); the value is never returned */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    name: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        /** @description the tenants whose sessions may use it; null or absent on a new secret: every tenant; absent on a replaced one: unchanged */
                        tenants?: string[] | null;
                        value: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        post?: never;
        /** delete a secret; sessions bound to it get a clear error on their next request */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    name: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list sessions */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["SessionList"];
                    };
                };
            };
        };
        put?: never;
        /** create a session and start its machine */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": components["schemas"]["CreateSession"];
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** get a session with its meters */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** terminate: destroy machine, disk and memory images */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/audit": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** audit records of the session (afterSeq and limit page through them; tail=N gives the last N) */
        get: {
            parameters: {
                query?: {
                    afterSeq?: number;
                    limit?: number;
                    tail?: number;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AuditLog"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/audit/export": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** every audit record, then the chain head signed with the audit key, as JSON lines ({kind: record|head, ...}) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description JSON lines */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/x-ndjson": string;
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/audit/verify": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** verify the hash chain against the audit key and the heads kept outside the database */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AuditVerification"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/contract": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** the contract the session runs under, with its version */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["SessionContract"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** replace a running session's network lists: a new contract version, audited as contract.updated, applied to the gateway at once. filesystem lists cannot change (the machine's mounts enforce them): a different one is refused with INVALID_STATE */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        /** @description must equal the session's lists: readOnly, denyRead, denyWrite, allowWrite */
                        filesystem?: Record<string, never>;
                        network?: {
                            allowedDomains?: string[];
                            deniedDomains?: string[];
                        };
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        trace?: never;
    };
    "/v1/sessions/{id}/desktop": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** the display: whether the session has one (available), width, height, the takeover in progress (or null) and the path of the live view */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/actions": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** one mouse or keyboard action, through the airlock (tool desktop.act) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": components["schemas"]["desktop_act_arguments"];
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description completed */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ToolCallOutcome"];
                    };
                };
                /** @description held for approval */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ToolCallOutcome"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/screenshot": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** the screen as PNG, through the airlock (tool desktop.screenshot); 202 with the approval when held */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description the screen */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "image/png": string;
                    };
                };
                /** @description held for approval */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ToolCallOutcome"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/takeover": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** take the desktop over: agent actions wait (reason TAKEOVER) until it is handed back; recorded */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        by?: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description taken over */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** hand the desktop back */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/takeovers/{takeoverId}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                takeoverId: string;
            };
            cookie?: never;
        };
        /** a takeover's recording: frames (thumbnail names) and input events */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    takeoverId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/thumbnails/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                name: string;
            };
            cookie?: never;
        };
        /** a kept screen thumbnail (PNG): a desktop call's, named by its call id, or a takeover frame */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    name: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/desktop/vnc": {
        parameters: {
            query?: {
                takeover?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** WebSocket: the display's VNC stream (RFB 3.8, security None), view-only unless ?takeover= names the takeover in progress */
        get: {
            parameters: {
                query?: {
                    takeover?: string;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/exec": {
        parameters: {
            query?: {
                stream?: boolean;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** run a command; with stream=true the answer is NDJSON lines {type: stdout|stderr (base64 data) | outcome | error} */
        post: {
            parameters: {
                query?: {
                    stream?: boolean;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": components["schemas"]["exec_arguments"];
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description completed */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description held for approval */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** fork into count branches (from the session now, or from snapshotId); each branch is a new session or {index, sessionId, error}; in a cluster, branches go to the nodes with the most free capacity */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        count: number;
                        /** @description lineage index of the first branch: set by a node asking another for its share of a fork */
                        firstBranchIndex?: number;
                        snapshotId?: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description forked */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ForkResult"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/guard/reset": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** reset the runaway breaker */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/keep-awake": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** keep the machine from pausing or suspending when idle (false lets it sleep again) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        keepAwake: boolean;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** freeze the machine in place */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/ports": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** list exposed ports */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ExposedPortList"];
                    };
                };
            };
        };
        put?: never;
        /** expose a port of the machine through the server */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        port: number;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description exposed */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ExposedPort"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/ports/{port}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                port: number;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** stop exposing a port */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    port: number;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/ports/{port}/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                path: string;
                port: number;
            };
            cookie?: never;
        };
        /** HTTP proxied to the exposed port inside the machine (any method; wakes a sleeping machine; 502 PORT_UNREACHABLE when nothing listens) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    path: string;
                    port: number;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/resize": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** change the CPU and memory limits of the running machine in place, up to the contract ceiling (default 4× the start) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        cpus?: number;
                        memoryMb?: number;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/restart": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** a fresh machine on the same disk, for a degraded (silent) or failed machine: files kept, processes and memory lost */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** restore the machine where it stopped */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** snapshot memory, processes and disk of a running session at one instant; it keeps running */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        name?: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Snapshot"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/suspend": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** checkpoint memory and processes, stop the machine */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Session"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/terminal": {
        parameters: {
            query?: {
                client?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** takeover terminal: WebSocket (subprotocol airlock.terminal.v1) to a shell on a PTY in the machine; the session's tool calls wait (reason TAKEOVER) until the socket closes; recorded (asciicast v2). A plain GET says whether it is available (409 no machine, 501 NOT_AVAILABLE driver without PTYs) */
        get: {
            parameters: {
                query?: {
                    client?: string;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/terminal/recordings/{takeoverId}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                takeoverId: string;
            };
            cookie?: never;
        };
        /** the asciicast v2 recording of a terminal takeover (application/x-asciicast), as linked from its takeover.started / takeover.ended audit records */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    takeoverId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/tools/{tool}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                tool: "exec" | "files.read" | "files.write" | "files.edit" | "files.list" | "files.stat" | "files.remove" | "files.mkdir" | "snapshot" | "fork" | "desktop.screenshot" | "desktop.act";
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** run any tool through the airlock */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    tool: "exec" | "files.read" | "files.write" | "files.edit" | "files.list" | "files.stat" | "files.remove" | "files.mkdir" | "snapshot" | "fork" | "desktop.screenshot" | "desktop.act";
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description completed */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ToolCallOutcome"];
                    };
                };
                /** @description held for approval */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ToolCallOutcome"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list snapshots (sessionId to filter; all=true includes deleted ones) */
        get: {
            parameters: {
                query?: {
                    all?: boolean;
                    sessionId?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["SnapshotList"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        /** get a snapshot */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Snapshot"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** delete a snapshot's bytes (the record stays) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Snapshot"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list tenants with settings (admin) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenants/{tenant}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                tenant: string;
            };
            cookie?: never;
        };
        /** a tenant's quotas (admin); a tenant nobody configured has none */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    tenant: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** change some of a tenant's quotas or its images (admin); null removes a limit, absent keys stay */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    tenant: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        /** @description the images its sessions may use; null: every image */
                        images?: string[] | null;
                        maxConcurrentCalls?: number | null;
                        maxForkBranches?: number | null;
                        maxForkDepth?: number | null;
                        maxSessions?: number | null;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenants/{tenant}/usage": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                tenant: string;
            };
            cookie?: never;
        };
        /** meters summed over the sessions of a tenant */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    tenant: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list API tokens (admin): ids, tenant, role, name, created, last used, revoked; never secrets */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        /** make an API token of a tenant (admin); the secret is in the answer once, and stored only as a hash */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        name?: string;
                        /** @enum {string} */
                        role?: "admin" | "operator" | "approver" | "agent" | "metrics";
                        tenant: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description created: {id, token, tenant, role, name, createdAt} */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** revoke an API token (admin): it answers 401 from now on */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/warm-pool": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** this server's warm pools: machines kept ready per class of session, claims and misses (`airlock serve --warm-pool N`) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["WarmPool"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** list lifecycle webhook endpoints (admin): url, events, tenant, state, deliveries by state; never secrets */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        put?: never;
        /** register a lifecycle webhook endpoint (admin); its whsec_ signing secret is in the answer once (Standard Webhooks 1.0) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": {
                        events: string[];
                        tenant?: string;
                        url: string;
                    };
                };
            };
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description created: {id, url, events, tenant, state, createdAt, createdBy, secret} */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** remove a webhook endpoint and its pending deliveries (admin) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** send a signed webhook.test event to an endpoint now (admin): {id, status, ok, error} */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the identity of the caller (bearer token or console login), with the login's CSRF token */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description error */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description error */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Error"];
                    };
                };
                /** @description ok */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Login"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Approval: {
            call: {
                arguments: {
                    [key: string]: unknown;
                };
                id: string;
                receivedAt: string;
                sessionId: string;
                tool: string;
            };
            createdAt: string;
            decidedAt: string | null;
            decidedBy: string | null;
            decisionReason: string | null;
            expiresAt: string;
            id: string;
            outcome?: {
                callId: string;
                decision: {
                    /** @enum {string} */
                    decision: "allow" | "deny" | "ask";
                    enforced: boolean;
                    errors: string[];
                    policyIds: string[];
                    reason: string;
                };
                result: {
                    [key: string]: unknown;
                };
                /** @constant */
                status: "completed";
                timing: {
                    queuedMs: number;
                    resumeMs: number;
                    runMs: number;
                    startMs: number;
                    totalMs: number;
                };
                tool: string;
            } | {
                callId: string;
                decision: {
                    /** @enum {string} */
                    decision: "allow" | "deny" | "ask";
                    enforced: boolean;
                    errors: string[];
                    policyIds: string[];
                    reason: string;
                } | null;
                error: {
                    code: string;
                    details: {
                        [key: string]: unknown;
                    };
                    message: string;
                };
                /** @constant */
                status: "refused";
                tool: string;
            } | {
                approvalId: string;
                callId: string;
                decision: {
                    /** @enum {string} */
                    decision: "allow" | "deny" | "ask";
                    enforced: boolean;
                    errors: string[];
                    policyIds: string[];
                    reason: string;
                };
                /** @constant */
                status: "pending-approval";
                tool: string;
            };
            policyIds: string[];
            reason: string;
            sessionId: string;
            /** @enum {string} */
            state: "pending" | "approved" | "denied" | "expired" | "executed";
        };
        ApprovalList: {
            approvals: {
                call: {
                    arguments: {
                        [key: string]: unknown;
                    };
                    id: string;
                    receivedAt: string;
                    sessionId: string;
                    tool: string;
                };
                createdAt: string;
                decidedAt: string | null;
                decidedBy: string | null;
                decisionReason: string | null;
                expiresAt: string;
                id: string;
                outcome?: {
                    callId: string;
                    decision: {
                        /** @enum {string} */
                        decision: "allow" | "deny" | "ask";
                        enforced: boolean;
                        errors: string[];
                        policyIds: string[];
                        reason: string;
                    };
                    result: {
                        [key: string]: unknown;
                    };
                    /** @constant */
                    status: "completed";
                    timing: {
                        queuedMs: number;
                        resumeMs: number;
                        runMs: number;
                        startMs: number;
                        totalMs: number;
                    };
                    tool: string;
                } | {
                    callId: string;
                    decision: {
                        /** @enum {string} */
                        decision: "allow" | "deny" | "ask";
                        enforced: boolean;
                        errors: string[];
                        policyIds: string[];
                        reason: string;
                    } | null;
                    error: {
                        code: string;
                        details: {
                            [key: string]: unknown;
                        };
                        message: string;
                    };
                    /** @constant */
                    status: "refused";
                    tool: string;
                } | {
                    approvalId: string;
                    callId: string;
                    decision: {
                        /** @enum {string} */
                        decision: "allow" | "deny" | "ask";
                        enforced: boolean;
                        errors: string[];
                        policyIds: string[];
                        reason: string;
                    };
                    /** @constant */
                    status: "pending-approval";
                    tool: string;
                };
                policyIds: string[];
                reason: string;
                sessionId: string;
                /** @enum {string} */
                state: "pending" | "approved" | "denied" | "expired" | "executed";
            }[];
        };
        AuditLog: {
            records: {
                at: string;
                data: {
                    [key: string]: unknown;
                };
                hash: string;
                prevHash: string;
                seq: number;
                sessionId: string;
                type: string;
            }[];
            sessionId: string;
        };
        AuditRecord: {
            at: string;
            data: {
                [key: string]: unknown;
            };
            hash: string;
            prevHash: string;
            seq: number;
            sessionId: string;
            type: string;
        };
        AuditReport: {
            chains: number;
            failed: {
                anchoredSeq: number | null;
                /** @enum {string} */
                authenticity: "keyed" | "legacy" | "mixed" | "none";
                missing: boolean;
                note?: string;
                ok: boolean;
                problem?: {
                    kind: string;
                    message: string;
                    seq: number;
                };
                records: number;
                sessionId: string;
            }[];
            missing: string[];
            ok: boolean;
        };
        AuditVerification: {
            anchoredSeq: number | null;
            /** @enum {string} */
            authenticity: "keyed" | "legacy" | "mixed" | "none";
            note?: string;
            ok: boolean;
            problem?: {
                kind: string;
                message: string;
                seq: number;
            };
            records: number;
            sessionId: string;
        };
        CallTiming: {
            queuedMs: number;
            resumeMs: number;
            runMs: number;
            startMs: number;
            totalMs: number;
        };
        CreateSession: {
            /** @description session contract (object, or JSON/YAML text) */
            contract?: unknown;
            idleTimeoutSeconds?: number;
            image?: string;
            /** @enum {string} */
            mode?: "machine" | "per-call";
            /** @description sandbox driver: gvisor (default) or microvm; overrides nothing: a contract naming another is refused */
            sandbox?: string;
        };
        desktop_act_arguments: {
            /** @constant */
            action: "click";
            /**
             * @default left
             * @enum {string}
             */
            button: "left" | "middle" | "right";
            /** @default 1 */
            count: number;
            /** @description keys held during the click, e.g. "shift" or "ctrl+shift" */
            modifiers?: string;
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "double_click";
            /** @description keys held during the click, e.g. "shift" or "ctrl+shift" */
            modifiers?: string;
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "right_click";
            /** @description keys held during the click, e.g. "shift" or "ctrl+shift" */
            modifiers?: string;
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "move";
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "drag";
            toX: number;
            toY: number;
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "scroll";
            /** @default 0 */
            dx: number;
            /** @default 0 */
            dy: number;
            x: number;
            y: number;
        } | {
            /** @constant */
            action: "type";
            text: string;
        } | {
            /** @constant */
            action: "key";
            holdMs?: number;
            keys: string;
        } | {
            /** @constant */
            action: "wait";
            ms: number;
        } | {
            /** @constant */
            action: "mouse_down";
            /**
             * @default left
             * @enum {string}
             */
            button: "left" | "middle" | "right";
        } | {
            /** @constant */
            action: "mouse_up";
            /**
             * @default left
             * @enum {string}
             */
            button: "left" | "middle" | "right";
        } | {
            /** @constant */
            action: "cursor_position";
        };
        desktop_screenshot_arguments: Record<string, never>;
        Error: {
            error: {
                /** @enum {string} */
                code: "INVALID_ARGUMENTS" | "INVALID_REQUEST" | "INVALID_CONTRACT" | "UNAUTHORIZED" | "LOGIN_EXPIRED" | "CSRF_REJECTED" | "ORIGIN_FORBIDDEN" | "HOST_FORBIDDEN" | "POLICY_DENIED" | "FILE_ACCESS_DENIED" | "ROLE_FORBIDDEN" | "APPROVAL_DENIED" | "APPROVAL_EXPIRED" | "RUNAWAY_DETECTED" | "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" | "NOT_FOUND" | "SESSION_NOT_FOUND" | "IMAGE_NOT_FOUND" | "SNAPSHOT_NOT_FOUND" | "APPROVAL_NOT_FOUND" | "SECRET_NOT_FOUND" | "TOKEN_NOT_FOUND" | "WEBHOOK_NOT_FOUND" | "FILE_NOT_FOUND" | "INVALID_STATE" | "SESSION_BUSY" | "SESSION_DEGRADED" | "SESSION_NOT_OWNED" | "LEASE_LOST" | "NODE_LOST" | "WRITE_CONFLICT" | "DESKTOP_UNAVAILABLE" | "SCREEN_CHANGED" | "APPROVAL_ALREADY_DECIDED" | "IMAGE_EXISTS" | "FILE_EXISTS" | "FILE_CHANGED" | "SANDBOX_INCOMPATIBLE" | "AUDIT_CHAIN_TRUNCATED" | "EDIT_NO_MATCH" | "EDIT_AMBIGUOUS" | "NOT_A_DIRECTORY" | "IS_A_DIRECTORY" | "PAYLOAD_TOO_LARGE" | "INVALID_IMAGE" | "SNAPSHOT_CORRUPT" | "SNAPSHOT_INCOMPATIBLE" | "DISK_FULL" | "PORT_UNREACHABLE" | "NOT_AVAILABLE" | "DRIVER_UNAVAILABLE" | "OBJECT_STORAGE_UNAVAILABLE" | "NODE_UNREACHABLE" | "DRIVER_FAILED" | "SANDBOX_DIED" | "SANDBOX_NOT_ANSWERING" | "AUDIT_UNAVAILABLE" | "STORE_UNAVAILABLE" | "INVALID_CONFIGURATION" | "INTERNAL";
                details?: Record<string, never>;
                message: string;
            };
        };
        exec_arguments: {
            argv?: string[];
            command?: string;
            /** @default /workspace */
            cwd: string;
            /** @default false */
            detach: boolean;
            /** @default {} */
            env: {
                [key: string]: string;
            };
            /** @default false */
            ephemeral: boolean;
            stdin?: string;
            /**
             * @default utf8
             * @enum {string}
             */
            stdinEncoding: "utf8" | "base64";
            /** @default 120000 */
            timeoutMs: number;
        };
        ExposedPort: {
            path: string;
            port: number;
            url: string;
        };
        ExposedPortList: {
            ports: {
                path: string;
                port: number;
                url: string;
            }[];
            sessionId: string;
        };
        FileInfo: {
            mode: string;
            modifiedAt: string;
            name: string;
            path: string;
            size: number;
            target?: string;
            /** @enum {string} */
            type: "file" | "directory" | "symlink" | "other";
        };
        files_edit_arguments: {
            newString: string;
            oldString: string;
            path: string;
            /** @default false */
            replaceAll: boolean;
        };
        files_list_arguments: {
            /** @default /workspace */
            path: string;
        };
        files_mkdir_arguments: {
            path: string;
        };
        files_read_arguments: {
            /**
             * @default utf8
             * @enum {string}
             */
            encoding: "utf8" | "base64";
            /** @default 10485760 */
            maxBytes: number;
            path: string;
        };
        files_remove_arguments: {
            path: string;
            /** @default false */
            recursive: boolean;
        };
        files_stat_arguments: {
            path: string;
        };
        files_write_arguments: {
            content: string;
            /** @default true */
            createParents: boolean;
            /**
             * @default utf8
             * @enum {string}
             */
            encoding: "utf8" | "base64";
            path: string;
        };
        fork_arguments: {
            count: number;
            snapshotId?: string;
        };
        ForkBranchFailure: {
            error: {
                code: string;
                details: {
                    [key: string]: unknown;
                };
                message: string;
            };
            index: number;
            sessionId: string | null;
        };
        ForkResult: {
            branches: (({
                contractVersion: number;
                createdAt: string;
                exposedPorts?: number[];
                failure: {
                    code: string;
                    lastSnapshotAt?: string;
                    lastSnapshotId?: string;
                    message: string;
                } | null;
                guard: {
                    tripped: {
                        at: string;
                        callKey: string;
                        count: number;
                    } | null;
                };
                id: string;
                idle?: {
                    keepAwake: boolean;
                    pauseAfterSeconds: number;
                    suspendAfterSeconds: number;
                } | null;
                image: {
                    digest: string;
                    name: string;
                };
                lastActivityAt: string;
                lineage: {
                    branchIndex: number;
                    parentSessionId: string;
                    snapshotId: string;
                } | null;
                meters: {
                    cpuSeconds: number;
                    diskBytes: number;
                    idleFractionUnpaid: number;
                    memoryByteSeconds: number;
                    pausedSeconds: number;
                    peakMemoryBytes: number;
                    perCallSeconds?: number;
                    runningSeconds: number;
                    snapshotBytes: number;
                    suspendedSeconds: number;
                    timeWeightedMemoryBytes: number;
                    toolCalls: number;
                };
                /** @enum {string} */
                mode: "machine" | "per-call";
                node: string;
                pendingOperation: string | null;
                principal: string;
                resources: {
                    cpus: number;
                    diskMb: number;
                    maxProcesses: number;
                    memoryMb: number;
                } & {
                    [key: string]: unknown;
                };
                sandbox: string;
                sandboxId: string | null;
                snapshotId: string | null;
                /** @enum {string} */
                state: "creating" | "running" | "paused" | "suspended" | "degraded" | "terminated" | "failed";
                stateSince: string;
                tenant: string;
                tools: string[];
                updatedAt: string;
            } & {
                [key: string]: unknown;
            }) | {
                error: {
                    code: string;
                    details: {
                        [key: string]: unknown;
                    };
                    message: string;
                };
                index: number;
                sessionId: string | null;
            })[];
            snapshot: {
                checksum: string;
                contents: ("memory" | "disk")[];
                contractVersion: number;
                createdAt: string;
                deletedAt: string | null;
                expiresAt: string | null;
                id: string;
                image: {
                    digest: string;
                    name: string;
                };
                name: string | null;
                parentSnapshotId: string | null;
                /** @enum {string} */
                reason: "suspend" | "manual" | "fork";
                sessionId: string;
                sizeBytes: number;
                /** @enum {string} */
                state: "available" | "deleted" | "expired";
            };
        };
        Image: {
            createdAt: string;
            digest: string;
            env: {
                [key: string]: string;
            };
            name: string;
            rootfsDir: string;
            sizeBytes: number;
            /** @enum {string} */
            source: "debootstrap" | "oci-archive";
        } & {
            [key: string]: unknown;
        };
        ImageList: {
            images: ({
                createdAt: string;
                digest: string;
                env: {
                    [key: string]: string;
                };
                name: string;
                rootfsDir: string;
                sizeBytes: number;
                /** @enum {string} */
                source: "debootstrap" | "oci-archive";
            } & {
                [key: string]: unknown;
            })[];
        };
        Login: {
            csrfToken: string | null;
            expiresAt: string | null;
            identity: {
                /** @enum {string} */
                kind: "token" | "console";
                name: string;
                /** @enum {string} */
                role: "admin" | "operator" | "approver" | "agent" | "metrics";
                tenant: string;
                tokenId: string;
            };
        };
        Node: {
            address: string;
            heartbeatAt: string;
            id: string;
            sessions: number;
            /** @enum {string} */
            state: "active" | "draining" | "left" | "lost";
        };
        NodeList: {
            address: string;
            heartbeatAt: string;
            id: string;
            sessions: number;
            /** @enum {string} */
            state: "active" | "draining" | "left" | "lost";
        }[];
        PolicyDecision: {
            /** @enum {string} */
            decision: "allow" | "deny" | "ask";
            enforced: boolean;
            errors: string[];
            policyIds: string[];
            reason: string;
        };
        Session: {
            contractVersion: number;
            createdAt: string;
            exposedPorts?: number[];
            failure: {
                code: string;
                lastSnapshotAt?: string;
                lastSnapshotId?: string;
                message: string;
            } | null;
            guard: {
                tripped: {
                    at: string;
                    callKey: string;
                    count: number;
                } | null;
            };
            id: string;
            idle?: {
                keepAwake: boolean;
                pauseAfterSeconds: number;
                suspendAfterSeconds: number;
            } | null;
            image: {
                digest: string;
                name: string;
            };
            lastActivityAt: string;
            lineage: {
                branchIndex: number;
                parentSessionId: string;
                snapshotId: string;
            } | null;
            meters: {
                cpuSeconds: number;
                diskBytes: number;
                idleFractionUnpaid: number;
                memoryByteSeconds: number;
                pausedSeconds: number;
                peakMemoryBytes: number;
                perCallSeconds?: number;
                runningSeconds: number;
                snapshotBytes: number;
                suspendedSeconds: number;
                timeWeightedMemoryBytes: number;
                toolCalls: number;
            };
            /** @enum {string} */
            mode: "machine" | "per-call";
            node: string;
            pendingOperation: string | null;
            principal: string;
            resources: {
                cpus: number;
                diskMb: number;
                maxProcesses: number;
                memoryMb: number;
            } & {
                [key: string]: unknown;
            };
            sandbox: string;
            sandboxId: string | null;
            snapshotId: string | null;
            /** @enum {string} */
            state: "creating" | "running" | "paused" | "suspended" | "degraded" | "terminated" | "failed";
            stateSince: string;
            tenant: string;
            tools: string[];
            updatedAt: string;
        } & {
            [key: string]: unknown;
        };
        SessionContract: {
            contract: {
                [key: string]: unknown;
            };
            sessionId: string;
            version: number;
        };
        SessionList: {
            sessions: ({
                contractVersion: number;
                createdAt: string;
                exposedPorts?: number[];
                failure: {
                    code: string;
                    lastSnapshotAt?: string;
                    lastSnapshotId?: string;
                    message: string;
                } | null;
                guard: {
                    tripped: {
                        at: string;
                        callKey: string;
                        count: number;
                    } | null;
                };
                id: string;
                idle?: {
                    keepAwake: boolean;
                    pauseAfterSeconds: number;
                    suspendAfterSeconds: number;
                } | null;
                image: {
                    digest: string;
                    name: string;
                };
                lastActivityAt: string;
                lineage: {
                    branchIndex: number;
                    parentSessionId: string;
                    snapshotId: string;
                } | null;
                meters: {
                    cpuSeconds: number;
                    diskBytes: number;
                    idleFractionUnpaid: number;
                    memoryByteSeconds: number;
                    pausedSeconds: number;
                    peakMemoryBytes: number;
                    perCallSeconds?: number;
                    runningSeconds: number;
                    snapshotBytes: number;
                    suspendedSeconds: number;
                    timeWeightedMemoryBytes: number;
                    toolCalls: number;
                };
                /** @enum {string} */
                mode: "machine" | "per-call";
                node: string;
                pendingOperation: string | null;
                principal: string;
                resources: {
                    cpus: number;
                    diskMb: number;
                    maxProcesses: number;
                    memoryMb: number;
                } & {
                    [key: string]: unknown;
                };
                sandbox: string;
                sandboxId: string | null;
                snapshotId: string | null;
                /** @enum {string} */
                state: "creating" | "running" | "paused" | "suspended" | "degraded" | "terminated" | "failed";
                stateSince: string;
                tenant: string;
                tools: string[];
                updatedAt: string;
            } & {
                [key: string]: unknown;
            })[];
        };
        SessionMeters: {
            cpuSeconds: number;
            diskBytes: number;
            idleFractionUnpaid: number;
            memoryByteSeconds: number;
            pausedSeconds: number;
            peakMemoryBytes: number;
            perCallSeconds?: number;
            runningSeconds: number;
            snapshotBytes: number;
            suspendedSeconds: number;
            timeWeightedMemoryBytes: number;
            toolCalls: number;
        };
        Snapshot: {
            checksum: string;
            contents: ("memory" | "disk")[];
            contractVersion: number;
            createdAt: string;
            deletedAt: string | null;
            expiresAt: string | null;
            id: string;
            image: {
                digest: string;
                name: string;
            };
            name: string | null;
            parentSnapshotId: string | null;
            /** @enum {string} */
            reason: "suspend" | "manual" | "fork";
            sessionId: string;
            sizeBytes: number;
            /** @enum {string} */
            state: "available" | "deleted" | "expired";
        };
        snapshot_arguments: {
            name?: string;
        };
        SnapshotList: {
            snapshots: {
                checksum: string;
                contents: ("memory" | "disk")[];
                contractVersion: number;
                createdAt: string;
                deletedAt: string | null;
                expiresAt: string | null;
                id: string;
                image: {
                    digest: string;
                    name: string;
                };
                name: string | null;
                parentSnapshotId: string | null;
                /** @enum {string} */
                reason: "suspend" | "manual" | "fork";
                sessionId: string;
                sizeBytes: number;
                /** @enum {string} */
                state: "available" | "deleted" | "expired";
            }[];
        };
        ToolCall: {
            arguments: {
                [key: string]: unknown;
            };
            id: string;
            receivedAt: string;
            sessionId: string;
            tool: string;
        };
        ToolCallOutcome: {
            callId: string;
            decision: {
                /** @enum {string} */
                decision: "allow" | "deny" | "ask";
                enforced: boolean;
                errors: string[];
                policyIds: string[];
                reason: string;
            };
            result: {
                [key: string]: unknown;
            };
            /** @constant */
            status: "completed";
            timing: {
                queuedMs: number;
                resumeMs: number;
                runMs: number;
                startMs: number;
                totalMs: number;
            };
            tool: string;
        } | {
            callId: string;
            decision: {
                /** @enum {string} */
                decision: "allow" | "deny" | "ask";
                enforced: boolean;
                errors: string[];
                policyIds: string[];
                reason: string;
            } | null;
            error: {
                code: string;
                details: {
                    [key: string]: unknown;
                };
                message: string;
            };
            /** @constant */
            status: "refused";
            tool: string;
        } | {
            approvalId: string;
            callId: string;
            decision: {
                /** @enum {string} */
                decision: "allow" | "deny" | "ask";
                enforced: boolean;
                errors: string[];
                policyIds: string[];
                reason: string;
            };
            /** @constant */
            status: "pending-approval";
            tool: string;
        };
        WarmPool: {
            classes: {
                claims: number;
                driver: string;
                imageName: string;
                misses: number;
                ready: number;
                resources: {
                    cpus: number;
                    diskMb: number;
                    maxProcesses: number;
                    memoryMb: number;
                };
                starting: number;
            }[];
            lastFailure?: {
                at: string;
                code: string;
                message: string;
            };
            size: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
