const contender = (name) => ({ name, script: new URL(`./${name}.js`, import.meta.url) });

/** What a library-only install costs on disk, against a target and against Emmett's two packages. */
export const installSection = {
  name: 'install',
  title: 'Install size',
  baseline: 'emmett',
  // Sizes do not vary from run to run; one run each.
  runs: 1,
  subject: 'library',
  contenders: [contender('emmett'), contender('library'), contender('server')],
  rows: [
    { key: 'mb', name: 'library only: rastro and pg (node_modules)', unit: 'MB', baseline: { label: 'target', value: 25 }, maxRatio: 1, target: '< 25 MB' },
    { key: 'mb', name: 'library only, against Emmett on PostgreSQL', unit: 'MB' },
    { key: 'packages', name: 'library only: packages installed', unit: 'packages' },
  ],
  targets: `
Target: a library-only install (rastro and pg) under 25 MB on disk.
`,
  notes: (medians) => `
Each contender is a fresh project of its own in a temporary folder: \`npm install\` from the
registry, with rastro's workspace packages from their tarballs (\`npm pack\`), no lockfile;
node_modules measured in allocated blocks, as \`du\` counts them.

- **library**: \`rastro\` and \`pg\`: what a service that imports the library installs. Its run-time
  dependencies are \`pg\`, \`@opentelemetry/api\` and \`@standard-schema/spec\` (types only);
  PGlite, NATS and amqplib are optional peer dependencies, installed only by a service that uses
  them (\`rastro/nats\`, \`rastro/rabbitmq\`, an embedded database).
- **emmett**: \`@event-driven-io/emmett\` and \`@event-driven-io/emmett-postgresql\` 0.42.0.
- **server**: \`rastro-server\` (the command, the HTTP API and the console, with PGlite, Fastify,
  swagger-ui and both broker clients) with the library: ${medians.server.mb.toFixed(1)} MB in ${medians.server.packages} packages, what an operator installs.
`,
};
