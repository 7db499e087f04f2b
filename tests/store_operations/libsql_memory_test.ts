import { libsqlKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

runStoreOperations(libsqlKind("memory"));
