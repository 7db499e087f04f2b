/**
 * The bad inputs of the bad_input scenario: requests to the admin API and
 * command lines of `errand`, each wrong in one way (malformed ids, unknown
 * kinds, states, queues, schedules and topics, huge and negative numbers,
 * bad durations and dates, bad URLs, bad JSON bodies), and the rule an
 * answer to one must keep: a refusal (4xx, or exit code 1 or 2) whose
 * message says what is wrong in words, never a crash, a stack trace or a
 * leaked internal error.
 *
 * @module
 */

/** One bad request to the admin API (paths under the router's base). */
export interface BadRequest {
  readonly method: "GET" | "POST" | "DELETE";
  readonly path: string;
  /** The body, sent as JSON (`content-type: application/json`) unless `contentType` says otherwise. */
  readonly body?: string;
  readonly contentType?: string;
  /** Whether a 2xx answer is acceptable too (a filter that matches nothing, say); else it must be refused. */
  readonly mayAnswer?: boolean;
  /** An HTML page of the dashboard: only its status is judged. */
  readonly page?: boolean;
}

/** A well-formed id no job has. */
export const UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

const post = (path: string, body?: string, extra: Partial<BadRequest> = {}): BadRequest => ({
  method: "POST",
  path,
  body,
  ...extra,
});

/** The bad requests. */
export const BAD_REQUESTS: readonly BadRequest[] = [
  { method: "GET", path: "/api/jobs/not-an-id" },
  { method: "GET", path: `/api/jobs/${UNKNOWN_ID}` },
  { method: "GET", path: "/api/jobs/%E0%A4%A" },
  { method: "GET", path: "/api/jobs?state=bogus" },
  { method: "GET", path: "/api/jobs?limit=-5" },
  { method: "GET", path: "/api/jobs?limit=99999999999999999999" },
  { method: "GET", path: "/api/jobs?limit=abc" },
  // A cursor is a job id, and ids are the application's to choose: one no job has still marks a place in the order.
  { method: "GET", path: "/api/jobs?cursor=garbage", mayAnswer: true },
  { method: "GET", path: `/api/jobs?queue=${"q".repeat(10_000)}`, mayAnswer: true },
  { method: "GET", path: "/api/jobs?kind=%00", mayAnswer: true },
  { method: "GET", path: "/api/stats?minutes=7" },
  { method: "GET", path: "/api/stats?minutes=-1" },
  post("/api/jobs/retry", "{not json"),
  post("/api/jobs/retry", "[]"),
  post("/api/jobs/retry", "null"),
  post("/api/jobs/retry", "{}"),
  post("/api/jobs/retry", '{"state":"bogus"}'),
  post("/api/jobs/retry", '{"state":"running"}'),
  post("/api/jobs/delete", '{"state":"available","before":"yesterday"}'),
  post("/api/jobs/delete", '{"state":"available","after":1e300}'),
  post("/api/jobs/cancel", '{"state":"available","queue":123}'),
  post("/api/jobs/cancel", '{"state":"available","kind":["work"]}'),
  post("/api/jobs/retry", '{"state":"failed"}', { contentType: "text/plain" }),
  post("/api/jobs/retry", JSON.stringify({ state: "failed", queue: "x".repeat(2_000_000) })),
  post(`/api/jobs/${UNKNOWN_ID}/retry`),
  post("/api/jobs/not-an-id/cancel"),
  { method: "DELETE", path: "/api/jobs/not-an-id" },
  post("/api/schedules/nosuch/trigger"),
  { method: "GET", path: "/api/topics/nosuch/partitions" },
  post("/api/topics/orders/partitions/99999/force-fail"),
  post("/api/topics/orders/partitions/-1/force-fail"),
  { method: "GET", path: "/api/queues/nosuch/limits" },
  // A page size out of range is brought into it (1 to the router's largest page).
  { method: "GET", path: "/api/queues/default/groups?limit=0", mayAnswer: true },
  post("/api/groups/nosuch/g1/pause?duration=1h"),
  post("/api/groups/work/g1/pause?duration=forever"),
  post("/api/groups/work/g1/pause?duration=-5s"),
  { method: "GET", path: "/api/logs/nosuch" },
  { method: "GET", path: "/api/logs/nosuch/records?from=-1" },
  post("/api/logs/nosuch/groups/g/seek", '{"offset":"x"}'),
  { method: "GET", path: `/api/jobs/${UNKNOWN_ID}/events` },
  { method: "GET", path: "/job/not-an-id", page: true },
  { method: "GET", path: "/queue/%E0%A4%A", page: true },
];

/** One bad command line (after `--db <url>`, unless `noDb`). */
export interface BadCommand {
  readonly args: readonly string[];
  /** Run without the scenario's `--db` (the arguments give their own, or none). */
  readonly noDb?: boolean;
  /** Whether exit code 0 is acceptable too (a filter that matches nothing, say); else it must fail. */
  readonly mayAnswer?: boolean;
}

/** The bad command lines; the quick form runs the first {@link QUICK_COMMANDS}. */
export const BAD_COMMANDS: readonly BadCommand[] = [
  { args: ["get", "not-an-id"] },
  { args: ["retry", UNKNOWN_ID] },
  { args: ["delete", "--state", "bogus"] },
  { args: ["list", "--limit", "99999999999999999999"] },
  { args: ["list", "--cursor", "garbage"], mayAnswer: true },
  { args: ["stats", "--watch", "--interval", "1ms"] },
  { args: ["delete", "--state", "available", "--before", "yesterday"] },
  { args: ["retry", "--state", "failed", "--kind", "nosuchkind"], mayAnswer: true },
  { args: ["--db", "file:%ZZ", "stats"], noDb: true },
  { args: ["trigger", "nosuch"] },
  { args: ["get", ""] },
  { args: ["cancel", "not-an-id"] },
  { args: ["retry", "--state", "running"] },
  { args: ["list", "--limit", "-5"] },
  { args: ["stats", "--minutes", "7"] },
  { args: ["retry", "--state", "failed", "--after", "99999999999999d"] },
  { args: ["--db", "mysql://x/app", "stats"], noDb: true },
  { args: ["--db", "postgres://u:p@[bad/app", "stats"], noDb: true },
  { args: ["--db", "file:nope-errand-bad-input.db", "stats"], noDb: true },
  { args: ["pause", ""] },
  { args: ["migrate", "--print", "--from", "-1"] },
  { args: ["dashboard", "--port", "99999"] },
  { args: ["--connect-timeout", "forever", "stats"] },
  { args: ["work", "./no-such-module.ts"], noDb: true },
];

/** How many of {@link BAD_COMMANDS} the quick form runs. */
export const QUICK_COMMANDS = 10;

/** What in a message shows a crash or an internal error rather than words about the input. */
const UNCLEAR =
  /\bat .+:\d+:\d+|URIError|TypeError|RangeError|SyntaxError|ReferenceError|\bundefined\b|\bNaN\b|\[object |Internal Server Error/;

/** Why the admin API's answer to `request` breaks the rule, or undefined when it keeps it. */
export function judgeAnswer(request: BadRequest, status: number, body: string): string | undefined {
  if (status >= 500) return `${status}`;
  if (request.page) return undefined;
  if (status < 300 && request.mayAnswer) return undefined;
  if (status < 400) return `${status} for a bad input`;
  let error: unknown;
  try {
    error = (JSON.parse(body) as { error?: unknown }).error;
  } catch {
    return `${status} with a body that is not JSON: ${body.slice(0, 120)}`;
  }
  if (typeof error !== "string" || error.length < 12) return `${status} without a clear error: ${body.slice(0, 120)}`;
  if (UNCLEAR.test(error)) return `${status} with an unclear error: ${error.slice(0, 160)}`;
  return undefined;
}

/** Why a run of `command` that ended with `code` and `stderr` breaks the rule, or undefined when it keeps it. */
export function judgeRun(command: BadCommand, code: number | null, stderr: string): string | undefined {
  if (code === null) return "killed (a crash or a hang)";
  if (code === 0) return command.mayAnswer ? undefined : "exit code 0 for a bad input";
  if (code !== 1 && code !== 2) return `exit code ${code}`;
  // Progress lines may come before the error, and commander's pointer to --help after it.
  const lines = stderr.split("\n");
  const at = lines.findIndex((line) => /^errand: \S/.test(line));
  if (at < 0 || !lines.slice(0, at).every((line) => /^[a-z]+: \S+\/\S+/.test(line))) {
    return `no one-line error: ${stderr.slice(0, 160)}`;
  }
  if (UNCLEAR.test(stderr)) return `an unclear error: ${stderr.slice(0, 200)}`;
  return undefined;
}
