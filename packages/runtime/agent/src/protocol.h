/*
 * The wire protocol between the control plane and the agent: numbers only.
 * docs/agent-protocol.md explains every message; the TypeScript side keeps
 * the same numbers in packages/runtime/src/drivers/agent/agent-protocol.ts
 * (a unit test compares the two files, so they cannot drift apart).
 */
#ifndef AIRLOCK_PROTOCOL_H
#define AIRLOCK_PROTOCOL_H

#define PROTOCOL_MAJOR 1
#define PROTOCOL_MINOR 0
#define AGENT_VERSION "1.0.0"

/* Frame: u32 length (of what follows it), u8 type, u8 flags, u16 reserved, u32 stream, payload. */
#define FRAME_HEADER_BYTES 12
#define FRAME_MAX_PAYLOAD 1048576
/* A field: u16 tag, u32 length, value; integers are 8-byte little-endian signed. */
#define FIELD_HEADER_BYTES 6
/* Bytes a side may send on one channel of one stream before the receiver grants more. */
#define INITIAL_WINDOW 262144
/* Largest DATA payload either side sends. */
#define DATA_CHUNK 65536
/* Streams open at once (exec, file transfers, port relays). */
#define MAX_STREAMS 256

/* Message types. */
#define MSG_HELLO 0x01
#define MSG_PING 0x02
#define MSG_PONG 0x03
#define MSG_PARK 0x04
#define MSG_PARKED 0x05
#define MSG_CANCEL 0x06
#define MSG_SHUTDOWN 0x07
#define MSG_OK 0x0E
#define MSG_ERROR 0x0F
#define MSG_EXEC 0x10
#define MSG_STARTED 0x11
#define MSG_EXITED 0x12
#define MSG_SIGNAL 0x13
#define MSG_RESIZE 0x14
#define MSG_DATA 0x20
#define MSG_END 0x21
#define MSG_WINDOW 0x22
#define MSG_READ 0x30
#define MSG_WRITE 0x31
#define MSG_STAT 0x32
#define MSG_LIST 0x33
#define MSG_MKDIR 0x34
#define MSG_REMOVE 0x35
#define MSG_RENAME 0x36
#define MSG_CANONICAL 0x37
#define MSG_ENTRY 0x38
#define MSG_PROCESSES 0x40
#define MSG_PROCESS 0x41
#define MSG_KILL 0x42
#define MSG_IDENTITY 0x48
#define MSG_CONNECT 0x50
#define MSG_CONNECTED 0x51

/* Channels (the flags byte of DATA, END and WINDOW). */
#define CHANNEL_INPUT 0
#define CHANNEL_OUTPUT 1
#define CHANNEL_ERROR 2

/* Field tags. */
#define TAG_PROTOCOL_MAJOR 1
#define TAG_PROTOCOL_MINOR 2
#define TAG_AGENT_VERSION 3
#define TAG_PID 4
#define TAG_CONNECTS 5
#define TAG_MODE 6
#define TAG_ARG 10
#define TAG_ENV 11
#define TAG_CWD 12
#define TAG_EXEC_FLAGS 13
#define TAG_PROCESS_LIMIT 14
#define TAG_ROWS 15
#define TAG_COLUMNS 16
#define TAG_LOG_PATH 17
#define TAG_EXIT_CODE 20
#define TAG_SIGNAL 21
#define TAG_PATH 30
#define TAG_TARGET 31
#define TAG_SYMLINKS 32
#define TAG_FOLLOW_LAST 33
#define TAG_OFFSET 34
#define TAG_LIMIT 35
#define TAG_PARENTS 36
#define TAG_RECURSIVE 37
#define TAG_NO_REPLACE 38
#define TAG_MODE_BITS 39
#define TAG_NAME 40
#define TAG_TYPE 41
#define TAG_SIZE 42
#define TAG_MODIFIED_MS 43
#define TAG_BYTES 44
#define TAG_COUNT 45
#define TAG_TRUNCATED 46
#define TAG_CREATED 47
#define TAG_PARENT_PID 50
#define TAG_STATE 51
#define TAG_GROUP 52
#define TAG_HOSTNAME 60
#define TAG_MACHINE_ID 61
#define TAG_ENTROPY 62
#define TAG_PORT 70
#define TAG_ERRNO 80
#define TAG_MESSAGE 81
#define TAG_DETAIL 82
#define TAG_CHILDREN 91
#define TAG_UPTIME_MS 92

/* EXEC flags. */
#define EXEC_STDIN 1
#define EXEC_PTY 2
#define EXEC_DETACH 4

/* SYMLINKS: how components of a path that are symbolic links are treated. */
#define SYMLINKS_REFUSE 0
#define SYMLINKS_FOLLOW 1

/* TYPE of an ENTRY. */
#define ENTRY_FILE 1
#define ENTRY_DIRECTORY 2
#define ENTRY_SYMLINK 3
#define ENTRY_OTHER 4

/* Path limits of file operations. */
#define PATH_MAX_BYTES 4095
#define NAME_MAX_BYTES 255
#define PATH_MAX_COMPONENTS 1024
#define SYMLINK_MAX_HOPS 40
#define REMOVE_MAX_DEPTH 256

#endif
