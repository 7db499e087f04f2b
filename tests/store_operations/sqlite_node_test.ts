import { sqliteKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

runStoreOperations(await sqliteKind("node:sqlite"));
