export default function setup(): void {
  if (!process.env.DATABASE_URL) {
    console.log('DATABASE_URL is not set: the real-PostgreSQL suites are skipped (embedded PGlite suites run).');
  }
}
