// The server package: `rastro serve`'s HTTP API and console, the operations loops, the command
// line, and the demos, on the library (`rastro`). Its public API is what embeds the server.
export { resolveConfig, type RastroOptions, type RastroConfig } from './config.js';
export { buildApp, type AppDeps } from './http/app.js';
export { startServer, type RunningServer, type ServerStartOptions } from './server.js';
export { openPublisher, openConsumer } from './brokers/open-broker.js';
export { readFigures, figureSamples, type Figures, type FiguresContext } from './operations/figures.js';
export { figureHistory, type FigureHistory, type FigureTimeline, type FigureSeries } from './operations/figure-history.js';
export { OperationTargetNotFoundError, OperationConflictError } from './operations/errors.js';
export { createMetrics, type Metrics, type FigureSample } from './observability/metrics.js';
