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
  return new Reader(bytes, maxDepth).document();
}

/**
 * The decoding of one payload: a cursor over its bytes. One object per
 * payload, its methods shared (a worker decodes every payload it runs).
 */
class Reader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #maxDepth: number;
  #pos = 0;

  constructor(bytes: Uint8Array, maxDepth: number) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#maxDepth = maxDepth;
  }

  /** The one value that spans all the bytes. */
  document(): unknown {
    const result = this.#value(0);
    if (this.#pos !== this.#bytes.byteLength) throw new MsgpackDecodeError("Trailing bytes after the value", this.#pos);
    return result;
  }

  /** Moves past the next `n` bytes, returning the offset of the first. */
  #advance(n: number): number {
    const at = this.#pos;
    if (at + n > this.#bytes.byteLength) throw new MsgpackDecodeError("Unexpected end of data", at);
    this.#pos = at + n;
    return at;
  }

  #u8(): number {
    return this.#bytes[this.#advance(1)];
  }

  #u16(): number {
    return this.#view.getUint16(this.#advance(2));
  }

  #u32(): number {
    return this.#view.getUint32(this.#advance(4));
  }

  #take(n: number): Uint8Array {
    const at = this.#advance(n);
    return this.#bytes.subarray(at, at + n);
  }

  #text(n: number): string {
    const at = this.#pos;
    const raw = this.#take(n);
    try {
      return utf8.decode(raw);
    } catch {
      throw new MsgpackDecodeError("Invalid UTF-8 in a string", at);
    }
  }

  /** A copy as a plain Uint8Array (never a view into, or a Buffer like, the row's bytes). */
  #bin(n: number): Uint8Array {
    return new Uint8Array(this.#take(n));
  }

  #int64(signed: boolean): number | bigint {
    const at = this.#advance(8);
    const big = signed ? this.#view.getBigInt64(at) : this.#view.getBigUint64(at);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }

  #array(n: number, depth: number): unknown[] {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(this.#value(depth));
    return out;
  }

  #map(n: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.#value(depth);
      if (typeof key !== "string" && typeof key !== "number") {
        throw new MsgpackDecodeError("A map key is not a string or number", this.#pos);
      }
      const name = String(key);
      const value = this.#value(depth);
      // Keys the prototype has are defined, not assigned: assigning "__proto__" would change the
      // prototype, and a frozen prototype makes "toString" and the like read-only.
      if (Object.hasOwn(Object.prototype, name)) {
        Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      } else {
        out[name] = value;
      }
    }
    return out;
  }

  #extension(size: number): unknown {
    const at = this.#advance(1);
    const type = this.#view.getInt8(at);
    const data = this.#take(size);
    if (type === 0 && size === 1) return undefined; // msgpackr's encoding of `undefined`
    if (type === -1) return this.#timestamp(data);
    throw new MsgpackDecodeError(`Unsupported extension type ${type}`, at);
  }

  #timestamp(data: Uint8Array): Date {
    const d = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data.byteLength === 4) return new Date(d.getUint32(0) * 1000);
    if (data.byteLength === 8) {
      const high = d.getUint32(0);
      const nanos = high >>> 2;
      const seconds = (high & 0x3) * 2 ** 32 + d.getUint32(4);
      return new Date(seconds * 1000 + nanos / 1e6);
    }
    if (data.byteLength === 12) return new Date(Number(d.getBigInt64(4)) * 1000 + d.getUint32(0) / 1e6);
    throw new MsgpackDecodeError("Invalid timestamp length", this.#pos);
  }

  #value(depth: number): unknown {
    if (depth > this.#maxDepth) throw new MsgpackDecodeError(`Nesting deeper than ${this.#maxDepth}`, this.#pos);
    const b = this.#u8();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if ((b & 0xe0) === 0xa0) return this.#text(b & 0x1f);
    if ((b & 0xf0) === 0x90) return this.#array(b & 0x0f, depth + 1);
    if ((b & 0xf0) === 0x80) return this.#map(b & 0x0f, depth + 1);
    const view = this.#view;
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#bin(this.#u8());
      case 0xc5:
        return this.#bin(this.#u16());
      case 0xc6:
        return this.#bin(this.#u32());
      case 0xc7:
        return this.#extension(this.#u8());
      case 0xc8:
        return this.#extension(this.#u16());
      case 0xc9:
        return this.#extension(this.#u32());
      case 0xca:
        return view.getFloat32(this.#advance(4));
      case 0xcb:
        return view.getFloat64(this.#advance(8));
      case 0xcc:
        return this.#u8();
      case 0xcd:
        return this.#u16();
      case 0xce:
        return this.#u32();
      case 0xcf:
        return this.#int64(false);
      case 0xd0:
        return view.getInt8(this.#advance(1));
      case 0xd1:
        return view.getInt16(this.#advance(2));
      case 0xd2:
        return view.getInt32(this.#advance(4));
      case 0xd3:
        return this.#int64(true);
      case 0xd4:
        return this.#extension(1);
      case 0xd5:
        return this.#extension(2);
      case 0xd6:
        return this.#extension(4);
      case 0xd7:
        return this.#extension(8);
      case 0xd8:
        return this.#extension(16);
      case 0xd9:
        return this.#text(this.#u8());
      case 0xda:
        return this.#text(this.#u16());
      case 0xdb:
        return this.#text(this.#u32());
      case 0xdc:
        return this.#array(this.#u16(), depth + 1);
      case 0xdd:
        return this.#array(this.#u32(), depth + 1);
      case 0xde:
        return this.#map(this.#u16(), depth + 1);
      case 0xdf:
        return this.#map(this.#u32(), depth + 1);
      default:
        throw new MsgpackDecodeError(`Invalid type byte 0x${b.toString(16)}`, this.#pos - 1);
    }
  }
}
