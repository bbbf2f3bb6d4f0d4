/**
 * The sandbox's DNS server, answered by the gateway itself: a name the
 * session may reach resolves to the gateway's address (so programs that
 * ignore HTTP_PROXY still land on the gateway, which routes by Host or SNI);
 * every other name is NXDOMAIN. Only A queries get answers; AAAA gets an
 * empty answer, since sandboxes have no IPv6.
 */

/** A parsed query, enough to answer it. */
export interface DnsQuestion {
  id: number;
  name: string;
  type: number;
  /** the question section as received, echoed in the answer */
  question: Buffer;
  recursionDesired: boolean;
}

const TYPE_A = 1;
const CLASS_IN = 1;

/** Parses a DNS query with one question; undefined for anything else. */
export function parseDnsQuery(message: Buffer): DnsQuestion | undefined {
  if (message.length < 12) return undefined;
  const flags = message.readUInt16BE(2);
  if (flags & 0x8000 || message.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    const length = message[offset];
    if (length === undefined || length > 63) return undefined;
    offset += 1;
    if (length === 0) break;
    labels.push(message.subarray(offset, offset + length).toString('ascii'));
    offset += length;
    if (offset > message.length) return undefined;
  }
  if (offset + 4 > message.length) return undefined;
  const type = message.readUInt16BE(offset);
  return { id: message.readUInt16BE(0), name: labels.join('.').toLowerCase(), type, question: message.subarray(12, offset + 4), recursionDesired: (flags & 0x0100) !== 0 };
}

/** The answer: `address` for an A query of a known name, an empty answer for other types, NXDOMAIN when `address` is undefined. */
export function dnsAnswer(query: DnsQuestion, address: string | undefined): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.id, 0);
  const rcode = address === undefined ? 3 : 0;
  header.writeUInt16BE(0x8000 | 0x0400 | (query.recursionDesired ? 0x0100 : 0) | 0x0080 | rcode, 2);
  header.writeUInt16BE(1, 4);
  const answers: Buffer[] = [];
  if (address !== undefined && query.type === TYPE_A) {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // pointer to the question's name
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(5, 6); // short TTL: a tightened policy takes effect quickly
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((part, index) => record.writeUInt8(Number(part), 12 + index));
    answers.push(record);
  }
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, query.question, ...answers]);
}

/** A REFUSED answer to a malformed or unsupported query (same id when it can be read). */
export function dnsRefused(message: Buffer): Buffer | undefined {
  if (message.length < 12) return undefined;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(message.readUInt16BE(0), 0);
  header.writeUInt16BE(0x8000 | 5, 2);
  return header;
}
