/** One figure as a metric, a console card and a list share it: a Prometheus name, labels and a value. */
export interface FigureSample {
  /** A Prometheus name with its unit: `rastro_outbox_lag_seconds`. */
  name: string;
  help: string;
  labels?: Record<string, string>;
  value: number;
}
