import { sqldKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

runConformance(sqldKind("http"));
