/**
 * The SSE events of one MCP session, kept in memory so that a client whose
 * connection dropped can reconnect with `Last-Event-ID` and receive the rest
 * of that stream, the call's result included (the SDK transport asks this
 * store on every event it sends and on every resume). Event ids name their
 * stream (`<stream>.<sequence>`), as the specification asks, so a resume
 * finds its stream even after the event it names was dropped.
 *
 * Bounded, oldest dropped first: events older than `maxAgeMs`, beyond
 * `maxEvents`, or beyond `maxBytes` of JSON; and the last `maxStreams`
 * streams are remembered. The defaults are stated in docs/mcp.md.
 */
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How much of a session's events is kept. */
export interface EventRetention {
  /** events older than this are dropped */
  maxAgeMs: number;
  /** most events kept */
  maxEvents: number;
  /** most bytes of event JSON kept */
  maxBytes: number;
  /** most streams a client can resume (the most recently written) */
  maxStreams: number;
}

/** Retention of each MCP session's events: 10 minutes, 5,000 events, 8 MiB, 1,000 streams. */
export const DEFAULT_EVENT_RETENTION: EventRetention = { maxAgeMs: 10 * 60_000, maxEvents: 5000, maxBytes: 8 * 1024 * 1024, maxStreams: 1000 };

interface StoredEvent {
  sequence: number;
  streamId: StreamId;
  message: JSONRPCMessage;
  bytes: number;
  storedAt: number;
}

/** An in-memory, bounded `EventStore` for one MCP session. */
export class BoundedEventStore implements EventStore {
  private events: StoredEvent[] = [];
  /** index of the oldest kept event in `events` (dropping from the front without shifting each time) */
  private head = 0;
  private bytes = 0;
  private sequence = 0;
  /** stream id → last use; Map order is least recently written first */
  private readonly streams = new Map<StreamId, number>();

  constructor(
    private readonly retention: EventRetention = DEFAULT_EVENT_RETENTION,
    private readonly now: () => number = Date.now,
  ) {}

  /** Number of events kept (for tests and figures). */
  get size(): number {
    return this.events.length - this.head;
  }

  /** Stores one event and returns its id. */
  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.sequence += 1;
    const event: StoredEvent = { sequence: this.sequence, streamId, message, bytes: JSON.stringify(message).length, storedAt: this.now() };
    this.events.push(event);
    this.bytes += event.bytes;
    this.streams.delete(streamId);
    this.streams.set(streamId, event.storedAt);
    while (this.streams.size > this.retention.maxStreams) this.streams.delete(this.streams.keys().next().value as StreamId);
    this.prune();
    return eventIdOf(event);
  }

  /** The stream an event id belongs to, if it is one this session still remembers. */
  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    const parsed = parseEventId(eventId);
    return parsed && this.streams.has(parsed.streamId) ? parsed.streamId : undefined;
  }

  /** Sends the kept events of the event's stream that came after it, in order; returns the stream id. */
  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const parsed = parseEventId(lastEventId);
    if (!parsed || !this.streams.has(parsed.streamId)) throw new Error(`event ${JSON.stringify(lastEventId)} belongs to no stream this MCP session remembers`);
    this.prune();
    // Copied first: sending yields, and the transport may store new events meanwhile.
    const after = this.events.slice(this.head).filter((event) => event.streamId === parsed.streamId && event.sequence > parsed.sequence);
    for (const event of after) {
      // Priming events carry no message; the client already holds their id.
      if (isJsonRpcMessage(event.message)) await send(eventIdOf(event), event.message);
    }
    return parsed.streamId;
  }

  private prune(): void {
    const oldest = this.now() - this.retention.maxAgeMs;
    while (this.head < this.events.length) {
      const first = this.events[this.head] as StoredEvent;
      if (first.storedAt >= oldest && this.size <= this.retention.maxEvents && this.bytes <= this.retention.maxBytes) break;
      this.bytes -= first.bytes;
      this.head += 1;
    }
    // Compact once the dropped prefix is as long as what is kept.
    if (this.head > 64 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.head = 0;
    }
  }
}

function eventIdOf(event: StoredEvent): EventId {
  return `${event.streamId}.${event.sequence}`;
}

function parseEventId(eventId: EventId): { streamId: StreamId; sequence: number } | undefined {
  const dot = eventId.lastIndexOf('.');
  const sequence = Number(eventId.slice(dot + 1));
  if (dot <= 0 || !Number.isSafeInteger(sequence) || sequence < 1) return undefined;
  return { streamId: eventId.slice(0, dot), sequence };
}

function isJsonRpcMessage(message: JSONRPCMessage): boolean {
  return (message as { jsonrpc?: unknown }).jsonrpc === '2.0';
}
