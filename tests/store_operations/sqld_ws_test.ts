import { sqldKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

runStoreOperations(sqldKind("ws"));
