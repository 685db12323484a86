#!/usr/bin/env bash
# Installs each example against the packed library, as a user would (npm pack, then the
# tarball), type-checks it with strict, and runs it against PostgreSQL (DATABASE_URL) and, when
# NATS_URL is set, JetStream. Usage: examples/run.sh [example…]   (default: every example)
set -euo pipefail
cd "$(dirname "$0")"
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL server}"

mkdir -p .pack
(cd .. && npm pack -w rastro --pack-destination examples/.pack --silent >/dev/null)
mv -f .pack/rastro-*.tgz .pack/rastro.tgz

examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(kysely drizzle pg)
for example in "${examples[@]}"; do
  echo "== examples/$example"
  (
    cd "$example"
    rm -rf node_modules dist
    npm install --no-package-lock --no-audit --no-fund --silent
    npx tsc -p tsconfig.json
    node dist/main.js
  )
done
