import { readFileSync } from 'node:fs';
import { ConfigError } from 'rastro/internal/errors.js';

/** A key file the configuration names (`RASTRO_MASTER_KEY_FILE`, `RASTRO_DIGEST_KEY_FILE`…): one that cannot be read is a configuration error. */
export function readKeyFile(name: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch {
    throw new ConfigError(`${name} names ${JSON.stringify(file)}, which cannot be read`);
  }
}
