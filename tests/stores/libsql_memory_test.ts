import { libsqlKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

runConformance(libsqlKind("memory"));
