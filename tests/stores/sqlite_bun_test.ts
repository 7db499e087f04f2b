import { sqliteKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

runConformance(await sqliteKind("bun:sqlite"));
