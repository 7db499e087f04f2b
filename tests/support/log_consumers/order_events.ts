/**
 * The retained log of the consumer-group runs (log_consumers.ts), shared by
 * the orchestrator, which appends to it, and the member processes
 * (member.ts), which consume it as one group: `orderEvents`, keyed
 * by `key`, on the suite's topic `orders` (16 partitions). `n` numbers the
 * records in the order they were appended, so per key it rises with the offset.
 */
import { defineLogs, log } from "errand";

/** One record: its key and its place in the order of appends. */
export interface OrderEvent {
  readonly key: string;
  readonly n: number;
}

/** The logs of the consumer-group runs. */
export const orderEventLogs = defineLogs({
  orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.key }),
});

/** The topic the log runs on: `orders`, of 16 partitions (the chaos suite's partitioned kind shares it). */
export const orderTopics = { orders: { partitions: 16 } };

/** The consumer group every member runs. */
export const GROUP = "billing";
