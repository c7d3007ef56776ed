// Types of parse-prometheus-text-format 1.1.1 (it ships none), as its README and prom2json describe the output.
declare module "parse-prometheus-text-format" {
  /** One metric family: samples as prom2json gives them (values as strings). */
  export interface MetricFamily {
    readonly name: string;
    readonly help: string;
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    readonly metrics: readonly {
      readonly value?: string;
      readonly labels?: Readonly<Record<string, string>>;
      readonly buckets?: Readonly<Record<string, string>>;
      readonly count?: string;
      readonly sum?: string;
    }[];
  }
  /** Parses Prometheus text exposition format into metric families. */
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
