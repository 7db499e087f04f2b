import { postgresKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

runStoreOperations(postgresKind());
