/**
 * Reads the server name (SNI) from the first bytes a TLS client sends, so
 * the gateway can check a tunnel's real destination without decrypting it.
 */

/** What the first bytes of a connection say. */
export type ClientHelloPeek =
  | { kind: 'incomplete' }
  | { kind: 'not-tls' }
  | { kind: 'tls'; serverName: string | undefined };

/** Largest ClientHello the gateway waits for before giving up. */
export const MAX_CLIENT_HELLO_BYTES = 16 * 1024;

/** Parses a TLS record holding a ClientHello; `incomplete` asks for more bytes. */
export function peekClientHello(data: Buffer): ClientHelloPeek {
  if (data.length < 5) return data.length > 0 && data[0] !== 0x16 ? { kind: 'not-tls' } : { kind: 'incomplete' };
  if (data[0] !== 0x16 || data[1] !== 0x03) return { kind: 'not-tls' };
  const recordLength = data.readUInt16BE(3);
  if (data.length < 5 + recordLength) return data.length >= MAX_CLIENT_HELLO_BYTES ? { kind: 'not-tls' } : { kind: 'incomplete' };
  const body = data.subarray(5, 5 + recordLength);
  try {
    return { kind: 'tls', serverName: serverNameOf(body) };
  } catch {
    return { kind: 'not-tls' };
  }
}

function serverNameOf(handshake: Buffer): string | undefined {
  if (handshake[0] !== 0x01) throw new Error('not a ClientHello');
  let offset = 4 + 2 + 32; // handshake header, client version, random
  offset += 1 + byteAt(handshake, offset); // session id
  offset += 2 + handshake.readUInt16BE(offset); // cipher suites
  offset += 1 + byteAt(handshake, offset); // compression methods
  if (offset + 2 > handshake.length) return undefined;
  const end = offset + 2 + handshake.readUInt16BE(offset);
  offset += 2;
  while (offset + 4 <= end) {
    const type = handshake.readUInt16BE(offset);
    const length = handshake.readUInt16BE(offset + 2);
    offset += 4;
    if (type === 0) {
      // server_name_list: length(2), then entries of type(1) length(2) name
      let entry = offset + 2;
      while (entry + 3 <= offset + length) {
        const nameType = byteAt(handshake, entry);
        const nameLength = handshake.readUInt16BE(entry + 1);
        if (nameType === 0) return handshake.subarray(entry + 3, entry + 3 + nameLength).toString('ascii').toLowerCase();
        entry += 3 + nameLength;
      }
      return undefined;
    }
    offset += length;
  }
  return undefined;
}

function byteAt(buffer: Buffer, offset: number): number {
  const value = buffer[offset];
  if (value === undefined) throw new Error('truncated');
  return value;
}
