/**
 * A small metrics registry and its Prometheus text encoder (format 0.0.4),
 * web-standard so it runs everywhere errand does. Label values are bounded:
 * past {@link MAX_LABEL_VALUES} distinct values of one label in one metric,
 * new values read `other`, so a runaway kind or queue name cannot grow the
 * output without end.
 *
 * @module
 */

/** Distinct values one label of one metric may take before new ones read `other`. */
export const MAX_LABEL_VALUES = 256;

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

type Kind = "counter" | "gauge" | "histogram";

interface Series {
  readonly labels: readonly string[];
  value: number;
  /** Histograms: observations per bucket (not cumulative), then the sum. */
  counts?: number[];
  sum?: number;
}

/** One metric with its series. */
export class Metric {
  readonly #series: Series[] = [];
  /** The series by their label values, one map per label in order; the last maps to the series. */
  readonly #index = new Map<string, unknown>();
  readonly #seen: Set<string>[];

  /** A metric `name` of `kind` with `labelNames`; histograms take their bucket bounds. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly kind: Kind,
    readonly labelNames: readonly string[] = [],
    readonly buckets: readonly number[] = [],
  ) {
    this.#seen = labelNames.map(() => new Set());
  }

  /** Adds `by` (default 1) to a counter or gauge. */
  inc(labels: Labels = {}, by = 1): void {
    this.#get(labels).value += by;
  }

  /** Sets a gauge. */
  set(labels: Labels, value: number): void {
    this.#get(labels).value = value;
  }

  /** Drops every series (a gauge about to be set afresh). */
  reset(): void {
    this.#series.length = 0;
    this.#index.clear();
  }

  /** Records one observation of a histogram. */
  observe(labels: Labels, value: number): void {
    const series = this.#get(labels);
    series.counts ??= new Array(this.buckets.length + 1).fill(0);
    series.sum = (series.sum ?? 0) + value;
    series.value++;
    const i = this.buckets.findIndex((b) => value <= b);
    series.counts[i === -1 ? this.buckets.length : i]++;
  }

  /** The metric in the Prometheus text format. */
  encode(): string {
    const lines = [`# HELP ${this.name} ${this.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`];
    lines.push(`# TYPE ${this.name} ${this.kind}`);
    for (const series of this.#series) {
      const pairs = this.labelNames.map((name, i) => [name, series.labels[i]] as const);
      if (this.kind !== "histogram") {
        lines.push(`${this.name}${labelText(pairs)} ${number(series.value)}`);
        continue;
      }
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += series.counts![i];
        lines.push(`${this.name}_bucket${labelText([...pairs, ["le", number(bound)]])} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket${labelText([...pairs, ["le", "+Inf"]])} ${series.value}`);
      lines.push(`${this.name}_sum${labelText(pairs)} ${number(series.sum ?? 0)}`);
      lines.push(`${this.name}_count${labelText(pairs)} ${series.value}`);
    }
    return lines.join("\n");
  }

  /** The series of `labels`: map lookups alone once it exists, since runs update several per job. */
  #get(labels: Labels): Series {
    const names = this.labelNames;
    let level = this.#index;
    for (let i = 0; i < names.length; i++) {
      const next = level.get(labels[names[i]] ?? "");
      if (next === undefined) return this.#add(labels);
      if (i === names.length - 1) return next as Series;
      level = next as Map<string, unknown>;
    }
    return (this.#series[0] ??= { labels: [], value: 0 });
  }

  /** Adds the series of `labels`, its values bounded, unless a bounded value makes it one that exists. */
  #add(labels: Labels): Series {
    const values = this.labelNames.map((name, i) => {
      const value = labels[name] ?? "";
      const seen = this.#seen[i];
      if (seen.has(value)) return value;
      if (seen.size >= MAX_LABEL_VALUES) return "other";
      seen.add(value);
      return value;
    });
    let level = this.#index;
    for (const value of values.slice(0, -1)) {
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(value, next = new Map());
      level = next;
    }
    const last = values[values.length - 1];
    let series = level.get(last) as Series | undefined;
    if (series === undefined) {
      series = { labels: values, value: 0 };
      level.set(last, series);
      this.#series.push(series);
    }
    return series;
  }
}

/** The metrics of one errand instance. */
export class Registry {
  readonly #metrics: Metric[] = [];

  /** Registers and returns a counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Metric {
    return this.#add(new Metric(name, help, "counter", labelNames));
  }

  /** Registers and returns a gauge. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): Metric {
    return this.#add(new Metric(name, help, "gauge", labelNames));
  }

  /** Registers and returns a histogram with upper bounds `buckets`. */
  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Metric {
    return this.#add(new Metric(name, help, "histogram", labelNames, buckets));
  }

  /** Every metric in the Prometheus text format, ending with a newline. */
  encode(): string {
    return this.#metrics.map((m) => m.encode()).join("\n") + "\n";
  }

  #add(metric: Metric): Metric {
    this.#metrics.push(metric);
    return metric;
  }
}

function labelText(pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return "";
  const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
  return `{${pairs.map(([k, v]) => `${k}="${escape(v)}"`).join(",")}}`;
}

function number(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}
