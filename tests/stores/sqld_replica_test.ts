import { sqldReplicaKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

runConformance(sqldReplicaKind());
