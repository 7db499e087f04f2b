/**
 * Cases of the schedules slice: a recurring job's definition saved and read
 * back whole, and its advance applied only while the definition and the
 * next occurrence are as the firing instance read them.
 *
 * @module
 */
import type { ScheduleRecord } from "../records.ts";
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { ready, T0 } from "./fixtures.ts";

function schedule(id: string, fields: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id,
    kind: "conformance",
    version: 1,
    queue: "default",
    priority: 2,
    payload: new Uint8Array([0x90]),
    maxAttempts: 5,
    timeoutMs: 30_000,
    retry: '{"base":1000}',
    cron: "0 3 * * *",
    timezone: "Europe/Paris",
    catchUp: 1,
    fingerprint: "f1",
    topic: null,
    partition: null,
    group: null,
    nextRunAt: T0 + 60_000,
    nextJobId: null,
    lastRunAt: null,
    lastJobId: null,
    createdAt: T0,
    updatedAt: T0,
    ...fields,
  };
}

const advance = {
  id: "nightly",
  fingerprint: "f1",
  from: T0 + 60_000,
  nextRunAt: T0 + 120_000,
  lastRunAt: T0 + 60_000,
};

/** The cases of recurring jobs' definitions. */
export const scheduleCases: StoreCase[] = cases("schedules", [
  [
    "scheduleAdvance",
    "scheduleAdvance() records a firing while the fingerprint and next occurrence are as read",
    async (env) => {
      const store = await ready(env);
      await store.scheduleSave({ schedule: schedule("nightly") });
      checkEqual(await store.scheduleAdvance({ ...advance, lastJobId: "job-1" }), true, "the advance");
      checkEqual(
        await store.scheduleGet({ id: "nightly" }),
        schedule("nightly", { nextRunAt: T0 + 120_000, lastRunAt: T0 + 60_000, lastJobId: "job-1" }),
        "the schedule after it",
      );
    },
  ],
  ["scheduleAdvance", "scheduleAdvance() of an occurrence another instance fired already does nothing", async (env) => {
    const store = await ready(env);
    await store.scheduleSave({ schedule: schedule("nightly") });
    await store.scheduleAdvance({ ...advance, lastJobId: "job-1" });
    checkEqual(await store.scheduleAdvance({ ...advance, lastJobId: "job-2" }), false, "the second advance");
    checkEqual((await store.scheduleGet({ id: "nightly" }))?.lastJobId, "job-1", "the last job");
  }],
  [
    "scheduleAdvance",
    "scheduleAdvance() under a changed definition or of a missing schedule does nothing",
    async (env) => {
      const store = await ready(env);
      await store.scheduleSave({ schedule: schedule("nightly", { fingerprint: "f2" }) });
      checkEqual(
        await store.scheduleAdvance({ ...advance, lastJobId: "job-1" }),
        false,
        "advance under fingerprint f1",
      );
      checkEqual(
        await store.scheduleAdvance({ ...advance, id: "missing", lastJobId: "job-1" }),
        false,
        "advance of a missing schedule",
      );
      checkEqual((await store.scheduleGet({ id: "nightly" }))?.nextRunAt, T0 + 60_000, "the next occurrence");
    },
  ],
  ["scheduleDelete", "scheduleDelete() deletes a schedule and says whether there was one", async (env) => {
    const store = await ready(env);
    await store.scheduleSave({ schedule: schedule("nightly") });
    checkEqual(await store.scheduleDelete({ id: "nightly" }), true, "the first delete");
    checkEqual(await store.scheduleDelete({ id: "nightly" }), false, "the second delete");
    checkEqual(await store.scheduleGet({ id: "nightly" }), null, "the schedule after it");
  }],
  ["scheduleGet", "scheduleGet() reads a missing schedule, or one of another namespace, as null", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await other.scheduleSave({ schedule: schedule("nightly") });
    checkEqual(await store.scheduleGet({ id: "nightly" }), null, "scheduleGet()");
  }],
  ["scheduleList", "scheduleList() reads the namespace's schedules by id", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await store.scheduleSave({ schedule: schedule("b") });
    await store.scheduleSave({ schedule: schedule("a", { topic: "orders", partition: 3, group: "g" }) });
    await other.scheduleSave({ schedule: schedule("c") });
    checkEqual(
      await store.scheduleList(),
      [schedule("a", { topic: "orders", partition: 3, group: "g" }), schedule("b")],
      "scheduleList()",
    );
  }],
  ["scheduleSave", "scheduleSave() stores every field and reads back the same record", async (env) => {
    const store = await ready(env);
    const saved = schedule("nightly", {
      nextJobId: "job-0",
      lastRunAt: T0 - 1,
      lastJobId: "job-x",
      timeoutMs: null,
      retry: null,
    });
    await store.scheduleSave({ schedule: saved });
    checkEqual(await store.scheduleGet({ id: "nightly" }), saved, "the schedule read back");
  }],
  [
    "scheduleSave",
    "scheduleSave() of a saved schedule replaces its definition and keeps its createdAt",
    async (env) => {
      const store = await ready(env);
      await store.scheduleSave({ schedule: schedule("nightly") });
      const changed = schedule("nightly", {
        cron: "*/5 * * * *",
        fingerprint: "f2",
        createdAt: T0 + 9_000,
        updatedAt: T0 + 9_000,
      });
      await store.scheduleSave({ schedule: changed });
      checkEqual(await store.scheduleGet({ id: "nightly" }), { ...changed, createdAt: T0 }, "the schedule read back");
    },
  ],
]);
