/**
 * A strict MessagePack decoder for payloads read from the database, which
 * may have been written by anyone who can write to it. It builds only plain
 * data: objects, arrays, strings, numbers, booleans, null, `undefined`,
 * `Uint8Array` and `Date` (the timestamp extension). Every other extension
 * type is refused, nesting is limited, and keys such as `__proto__` and
 * `constructor` become ordinary own properties.
 *
 * @module
 */

/** Thrown for bytes that are not a payload this decoder accepts. */
export class MsgpackDecodeError extends Error {
  /** Creates the error with the byte offset in the message. */
  constructor(message: string, offset: number) {
    super(`${message} at byte ${offset}`);
    this.name = "MsgpackDecodeError";
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes one MessagePack value that must span all of `bytes`. */
export function decodeMsgpack(bytes: Uint8Array, maxDepth: number): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;

  const need = (n: number) => {
    if (pos + n > bytes.byteLength) throw new MsgpackDecodeError("Unexpected end of data", pos);
  };
  const u8 = () => (need(1), bytes[pos++]);
  const u16 = () => (need(2), pos += 2, view.getUint16(pos - 2));
  const u32 = () => (need(4), pos += 4, view.getUint32(pos - 4));
  const take = (n: number) => (need(n), pos += n, bytes.subarray(pos - n, pos));
  const text = (n: number) => {
    const raw = take(n);
    try {
      return utf8.decode(raw);
    } catch {
      throw new MsgpackDecodeError("Invalid UTF-8 in a string", pos - n);
    }
  };
  // A copy as a plain Uint8Array (never a view into, or a Buffer like, the row's bytes).
  const bin = (n: number) => new Uint8Array(take(n));
  const int64 = (signed: boolean) => {
    need(8);
    const big = signed ? view.getBigInt64(pos) : view.getBigUint64(pos);
    pos += 8;
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  };

  const array = (n: number, depth: number) => {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(value(depth));
    return out;
  };
  const map = (n: number, depth: number) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = value(depth);
      if (typeof key !== "string" && typeof key !== "number") {
        throw new MsgpackDecodeError("A map key is not a string or number", pos);
      }
      // defineProperty keeps "__proto__" an own data property instead of a prototype change.
      Object.defineProperty(out, String(key), {
        value: value(depth),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  const extension = (size: number) => {
    need(1);
    const type = view.getInt8(pos++);
    const data = take(size);
    if (type === 0 && size === 1) return undefined; // msgpackr's encoding of `undefined`
    if (type === -1) return timestamp(data);
    throw new MsgpackDecodeError(`Unsupported extension type ${type}`, pos - size - 1);
  };
  const timestamp = (data: Uint8Array) => {
    const d = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data.byteLength === 4) return new Date(d.getUint32(0) * 1000);
    if (data.byteLength === 8) {
      const high = d.getUint32(0);
      const nanos = high >>> 2;
      const seconds = (high & 0x3) * 2 ** 32 + d.getUint32(4);
      return new Date(seconds * 1000 + nanos / 1e6);
    }
    if (data.byteLength === 12) return new Date(Number(d.getBigInt64(4)) * 1000 + d.getUint32(0) / 1e6);
    throw new MsgpackDecodeError("Invalid timestamp length", pos);
  };

  const value = (depth: number): unknown => {
    if (depth > maxDepth) throw new MsgpackDecodeError(`Nesting deeper than ${maxDepth}`, pos);
    const b = u8();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if ((b & 0xe0) === 0xa0) return text(b & 0x1f);
    if ((b & 0xf0) === 0x90) return array(b & 0x0f, depth + 1);
    if ((b & 0xf0) === 0x80) return map(b & 0x0f, depth + 1);
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return bin(u8());
      case 0xc5:
        return bin(u16());
      case 0xc6:
        return bin(u32());
      case 0xc7:
        return extension(u8());
      case 0xc8:
        return extension(u16());
      case 0xc9:
        return extension(u32());
      case 0xca:
        return need(4), pos += 4, view.getFloat32(pos - 4);
      case 0xcb:
        return need(8), pos += 8, view.getFloat64(pos - 8);
      case 0xcc:
        return u8();
      case 0xcd:
        return u16();
      case 0xce:
        return u32();
      case 0xcf:
        return int64(false);
      case 0xd0:
        return need(1), view.getInt8(pos++);
      case 0xd1:
        return need(2), pos += 2, view.getInt16(pos - 2);
      case 0xd2:
        return need(4), pos += 4, view.getInt32(pos - 4);
      case 0xd3:
        return int64(true);
      case 0xd4:
        return extension(1);
      case 0xd5:
        return extension(2);
      case 0xd6:
        return extension(4);
      case 0xd7:
        return extension(8);
      case 0xd8:
        return extension(16);
      case 0xd9:
        return text(u8());
      case 0xda:
        return text(u16());
      case 0xdb:
        return text(u32());
      case 0xdc:
        return array(u16(), depth + 1);
      case 0xdd:
        return array(u32(), depth + 1);
      case 0xde:
        return map(u16(), depth + 1);
      case 0xdf:
        return map(u32(), depth + 1);
      default:
        throw new MsgpackDecodeError(`Invalid type byte 0x${b.toString(16)}`, pos - 1);
    }
  };

  const result = value(0);
  if (pos !== bytes.byteLength) throw new MsgpackDecodeError("Trailing bytes after the value", pos);
  return result;
}
