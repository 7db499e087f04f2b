import { postgresKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

runConformance(postgresKind());
