/**
 * The application module the command line's tests hand to `errand work`
 * and `errand drain`: its default export is the test application's errand
 * on the database in ERRAND_TEST_DB (PostgreSQL in ERRAND_TEST_SCHEMA), in
 * the mode the command sets in ERRAND_MODE.
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { appErrand } from "./cli_app_errand.ts";

const url = process.env.ERRAND_TEST_DB;
if (!url) throw new Error("Set ERRAND_TEST_DB to the test database's URL");
const mode = process.env.ERRAND_MODE === "work" ? "work" : "enqueue";

export default url.startsWith("postgres")
  ? appErrand(
    postgresStore(postgres(url, { max: 4, onnotice: () => {} }), { schema: process.env.ERRAND_TEST_SCHEMA }),
    mode,
  )
  : appErrand(libsqlStore(createClient({ url })), mode);
