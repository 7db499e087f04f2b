/**
 * `errand dashboard [--port 8787] [--host 127.0.0.1] [--token <token>]`:
 * the admin router (`errand/hono`) on its own HTTP server (node:http
 * through @hono/node-server, which Node, Deno and Bun all run), until
 * SIGINT or SIGTERM.
 *
 * Every request needs the token (`--token` or ERRAND_ADMIN_TOKEN): as
 * `Authorization: Bearer <token>`, or from a browser as the cookie that
 * one visit to `/?token=<token>` sets (the address bar then drops it).
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";
import { type Command, Option } from "commander";
import { globalOptions, outputOf } from "../context.ts";
import { CommandFailure, UsageError } from "../failures.ts";
import { withErrand } from "../session.ts";
import { stopSignals } from "../signals.ts";
import { topicOption, wholeNumber } from "./options.ts";

/** The cookie a browser signs in with. */
const COOKIE = "errand_admin_token";

interface DashboardFlags {
  port: number;
  host: string;
  token?: string;
  topic: Record<string, { partitions: number }>;
  showPayloads?: boolean;
}

/** Adds `dashboard`. */
export function addDashboardCommand(program: Command): void {
  program
    .command("dashboard")
    .description("serve the admin dashboard and JSON API; every request needs the token")
    .addOption(new Option("--port <port>", "the port (0: any free one)").default(8787).argParser(wholeNumber(0, 65535)))
    .option("--host <host>", "the address to listen on", "127.0.0.1")
    .addOption(
      new Option("--token <token>", "the token requests must carry (Authorization: Bearer <token>)").env(
        "ERRAND_ADMIN_TOKEN",
      ),
    )
    .option("--show-payloads", "show job payloads and results (hidden by default)")
    .addOption(topicOption())
    .action(async (flags: DashboardFlags, command: Command) => {
      const token = flags.token ?? "";
      if (token.trim() === "") {
        throw new UsageError(
          "dashboard needs a token: set ERRAND_ADMIN_TOKEN (or pass --token); requests then send Authorization: Bearer <token>",
        );
      }
      const out = outputOf(command);
      if (token.length < 16) {
        out.note(out.errColor.yellow("errand: a token shorter than 16 characters is easy to guess"));
      }
      const [{ adminRouter }, { getCookie }, { createAdaptorServer }] = await Promise.all([
        import("../../adapters/hono/mod.ts"),
        import("hono/cookie"),
        import("@hono/node-server"),
      ]).catch((err) => {
        throw new CommandFailure(
          `The dashboard needs hono and @hono/node-server (${
            (err as Error).message.split("\n")[0]
          }); install them in your project: npm install hono @hono/node-server`,
          { cause: err },
        );
      });
      const expected = digest(token);
      const valid = (given: string | undefined) => given !== undefined && timingSafeEqual(digest(given), expected);
      await withErrand(command, async (errand, url) => {
        const admin = adminRouter(errand, {
          authorize: (c) =>
            valid(/^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]) || valid(getCookie(c, COOKIE)),
          showPayloads: flags.showPayloads === true,
        });
        const server = createAdaptorServer({
          fetch: (request: Request) => signIn(request, valid) ?? admin.fetch(request),
          hostname: flags.host,
        });
        const address = await new Promise<AddressInfo>((resolve, reject) => {
          server.once("error", reject);
          server.listen(flags.port, flags.host, () => resolve(server.address() as AddressInfo));
        }).catch((err: Error & { code?: string }) => {
          throw new CommandFailure(
            `Cannot listen on ${flags.host}:${flags.port} (${err.code ?? err.message}); ${
              err.code === "EADDRINUSE" ? "pick another --port" : "check --host and --port"
            }`,
            { cause: err },
          );
        });
        const host = address.family === "IPv6" || address.address.includes(":")
          ? `[${address.address}]`
          : address.address;
        const base = `http://${host}:${address.port}/`;
        const stop = stopSignals(() => {});
        if (out.json) out.printJsonLine({ url: base, namespace: globalOptions(command).namespace });
        else {
          out.print(`errand dashboard on ${base} (namespace "${globalOptions(command).namespace}", ${url.shown})`);
          out.print(
            out.color.dim(
              `open ${base}?token=<token> once in a browser (it sets a cookie), or send Authorization: Bearer <token>; Ctrl-C stops`,
            ),
          );
        }
        if (!["127.0.0.1", "::1", "localhost"].includes(flags.host)) {
          out.note(out.errColor.yellow(`errand: ${flags.host} is reachable from other machines over plain HTTP`));
        }
        try {
          await stop.stopped;
        } finally {
          stop.dispose();
          // Open event streams keep connections up: close them, and stop waiting after a moment where that is not possible.
          await new Promise<void>((resolve) => {
            const gaveUp = setTimeout(resolve, 2_000);
            server.close(() => {
              clearTimeout(gaveUp);
              resolve();
            });
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          });
        }
      }, { topics: flags.topic });
    });
}

/** A browser's sign-in, `GET ...?token=<token>`: sets the cookie and sends it back without the token; else undefined. */
function signIn(request: Request, valid: (token: string) => boolean): Response | undefined {
  const url = new URL(request.url);
  const given = url.searchParams.get("token");
  if (given === null || request.method !== "GET") return undefined;
  if (!valid(given)) return Response.json({ error: "Not authorized to use the errand admin" }, { status: 401 });
  url.searchParams.delete("token");
  return new Response(null, {
    status: 303,
    headers: {
      location: `${url.pathname}${url.search}`,
      "set-cookie": `${COOKIE}=${encodeURIComponent(given)}; Path=/; HttpOnly; SameSite=Strict`,
      "cache-control": "no-store",
    },
  });
}

function digest(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}
