/**
 * Bytes as hex text, the form in which the stores hand payloads to SQL in
 * bulk (a blob literal in SQLite, one text parameter in PostgreSQL).
 *
 * @module
 */

/** The two hex digits of each byte as two ASCII bytes, one 16-bit unit per byte (little-endian). */
const HEX_PAIRS = new Uint16Array(256);
const hexDigits = new Uint8Array(HEX_PAIRS.buffer);
for (let i = 0; i < 256; i++) {
  const digits = i.toString(16).padStart(2, "0");
  hexDigits[2 * i] = digits.charCodeAt(0);
  hexDigits[2 * i + 1] = digits.charCodeAt(1);
}
const ASCII = new TextDecoder();

/** `bytes` in lowercase hex, built as ASCII bytes and decoded once (string concatenation per byte was slower). */
export function toHex(bytes: Uint8Array): string {
  const pairs = new Uint16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) pairs[i] = HEX_PAIRS[bytes[i]];
  return ASCII.decode(pairs);
}

/** The bytes of hex text (either case), as {@link toHex} writes them or a database's `hex()` returns them. */
export function fromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(2 * i, 2), 16);
  return bytes;
}
