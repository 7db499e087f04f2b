/** Where errand writes what it does; pass your own to `createErrand({ logger })`. */
export interface Logger {
  /** Routine detail: claims, wake-ups. */
  debug(message: string, fields?: Record<string, unknown>): void;
  /** Lifecycle: start, shutdown. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Something went wrong and errand recovers by itself. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Something went wrong that may need attention. */
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The default logger: warnings and errors to the console, nothing else.
 *
 * @example Log everything
 * ```ts
 * import type { Logger } from "@errand/errand";
 * const logger: Logger = {
 *   debug: (m, f) => console.debug(m, f ?? ""),
 *   info: (m, f) => console.info(m, f ?? ""),
 *   warn: (m, f) => console.warn(m, f ?? ""),
 *   error: (m, f) => console.error(m, f ?? ""),
 * };
 * ```
 */
export const consoleLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (message, fields) => console.warn(`errand: ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`errand: ${message}`, fields ?? ""),
};

/** `logger` with `fields` added to every line's own (which win on a clash). */
export function withFields(logger: Logger, fields: Record<string, unknown>): Logger {
  const add = (own: Record<string, unknown> | undefined) => ({ ...fields, ...own });
  return {
    debug: (message, own) => logger.debug(message, add(own)),
    info: (message, own) => logger.info(message, add(own)),
    warn: (message, own) => logger.warn(message, add(own)),
    error: (message, own) => logger.error(message, add(own)),
  };
}
