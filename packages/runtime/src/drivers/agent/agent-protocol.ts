/**
 * The numbers of the agent protocol (docs/agent-protocol.md), the same as
 * `packages/runtime/agent/src/protocol.h`; a unit test reads the header and
 * compares, so the two sides cannot drift apart. Transport-agnostic: the
 * gVisor driver carries it over a host Unix socket, a microVM driver can
 * carry it over vsock or virtio-serial.
 */

/** Major version this host speaks; an agent saying another major is refused. */
export const PROTOCOL_MAJOR = 1;
/** Minor version this host knows; newer minors only add fields and messages. */
export const PROTOCOL_MINOR = 0;

/** Bytes of the fixed frame header: u32 length, u8 type, u8 flags, u16 reserved, u32 stream. */
export const FRAME_HEADER_BYTES = 12;
/** Largest payload of one frame, either way. */
export const FRAME_MAX_PAYLOAD = 1_048_576;
/** Bytes of a field header: u16 tag, u32 length. */
export const FIELD_HEADER_BYTES = 6;
/** Bytes one side may send on one channel of a stream before the receiver grants more. */
export const INITIAL_WINDOW = 262_144;
/** Largest DATA payload either side sends. */
export const DATA_CHUNK = 65_536;
/** Streams the agent keeps open at once. */
export const MAX_STREAMS = 256;

/** Message types. */
export const MessageType = {
  HELLO: 0x01,
  PING: 0x02,
  PONG: 0x03,
  PARK: 0x04,
  PARKED: 0x05,
  CANCEL: 0x06,
  SHUTDOWN: 0x07,
  OK: 0x0e,
  ERROR: 0x0f,
  EXEC: 0x10,
  STARTED: 0x11,
  EXITED: 0x12,
  SIGNAL: 0x13,
  RESIZE: 0x14,
  DATA: 0x20,
  END: 0x21,
  WINDOW: 0x22,
  READ: 0x30,
  WRITE: 0x31,
  STAT: 0x32,
  LIST: 0x33,
  MKDIR: 0x34,
  REMOVE: 0x35,
  RENAME: 0x36,
  CANONICAL: 0x37,
  ENTRY: 0x38,
  PROCESSES: 0x40,
  PROCESS: 0x41,
  KILL: 0x42,
  IDENTITY: 0x48,
  CONNECT: 0x50,
  CONNECTED: 0x51,
} as const;

/** Channels: the flags byte of DATA, END and WINDOW. */
export const Channel = { INPUT: 0, OUTPUT: 1, ERROR: 2 } as const;

/** Field tags. */
export const Tag = {
  PROTOCOL_MAJOR: 1,
  PROTOCOL_MINOR: 2,
  AGENT_VERSION: 3,
  PID: 4,
  CONNECTS: 5,
  MODE: 6,
  ARG: 10,
  ENV: 11,
  CWD: 12,
  EXEC_FLAGS: 13,
  PROCESS_LIMIT: 14,
  ROWS: 15,
  COLUMNS: 16,
  LOG_PATH: 17,
  EXIT_CODE: 20,
  SIGNAL: 21,
  PATH: 30,
  TARGET: 31,
  SYMLINKS: 32,
  FOLLOW_LAST: 33,
  OFFSET: 34,
  LIMIT: 35,
  PARENTS: 36,
  RECURSIVE: 37,
  NO_REPLACE: 38,
  MODE_BITS: 39,
  NAME: 40,
  TYPE: 41,
  SIZE: 42,
  MODIFIED_MS: 43,
  BYTES: 44,
  COUNT: 45,
  TRUNCATED: 46,
  CREATED: 47,
  PARENT_PID: 50,
  STATE: 51,
  GROUP: 52,
  HOSTNAME: 60,
  MACHINE_ID: 61,
  ENTROPY: 62,
  PORT: 70,
  ERRNO: 80,
  MESSAGE: 81,
  DETAIL: 82,
  CHILDREN: 91,
  UPTIME_MS: 92,
} as const;

/** EXEC flags. */
export const ExecFlag = { STDIN: 1, PTY: 2, DETACH: 4 } as const;

/** How symlinks met while resolving a path are treated. */
export const Symlinks = { REFUSE: 0, FOLLOW: 1 } as const;

/** TYPE of an ENTRY. */
export const EntryType = { FILE: 1, DIRECTORY: 2, SYMLINK: 3, OTHER: 4 } as const;

/** Path limits the agent enforces on file operations. */
export const PathLimit = {
  MAX_BYTES: 4095,
  NAME_MAX_BYTES: 255,
  MAX_COMPONENTS: 1024,
  SYMLINK_MAX_HOPS: 40,
  REMOVE_MAX_DEPTH: 256,
} as const;

/** Message types an agent may send; anything else from it is a protocol violation. */
export const AGENT_MESSAGES: ReadonlySet<number> = new Set([
  MessageType.HELLO,
  MessageType.PONG,
  MessageType.PARKED,
  MessageType.OK,
  MessageType.ERROR,
  MessageType.STARTED,
  MessageType.EXITED,
  MessageType.DATA,
  MessageType.END,
  MessageType.WINDOW,
  MessageType.ENTRY,
  MessageType.PROCESS,
  MessageType.CONNECTED,
]);
