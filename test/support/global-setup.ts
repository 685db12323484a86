import { existsSync } from 'node:fs';

export default function setup(): void {
  if (!process.env.DATABASE_URL) {
    console.log('DATABASE_URL is not set: the real-PostgreSQL suites are skipped (embedded PGlite suites run).');
  }
  if (!process.env.NATS_URL) console.log('NATS_URL is not set: the NATS JetStream suites are skipped.');
  if (!process.env.RABBITMQ_URL) console.log('RABBITMQ_URL is not set: the RabbitMQ suites are skipped.');
  if (!existsSync('/usr/bin/chromium')) console.log('/usr/bin/chromium is missing: the console browser suites are skipped (apt-get install -y chromium).');
}
