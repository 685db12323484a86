import { createPublicKey, type KeyObject } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import { ConfigError } from 'rastro/internal/errors.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { digestKey } from 'rastro/internal/trail/digest.js';
import { publishDigest } from 'rastro/internal/trail/publish-digest.js';
import { startSealer, type Sealer } from 'rastro/internal/trail/sealer.js';
import { takeDigest } from 'rastro/internal/trail/take-digest.js';
import type { RastroConfig } from '../config.js';
import { readKeyFile } from '../key-file.js';

/** The key that signs digests and the key verification trusts, from RASTRO_DIGEST_KEY_FILE and RASTRO_DIGEST_PUBLIC_KEY_FILE. */
export function digestKeys(config: Partial<Pick<RastroConfig, 'digestKeyFile' | 'digestPublicKeyFile'>>): { signing?: KeyObject; trusted?: KeyObject } {
  const signing = config.digestKeyFile ? digestKey(readKeyFile('RASTRO_DIGEST_KEY_FILE', config.digestKeyFile)) : undefined;
  let trusted: KeyObject | undefined;
  if (config.digestPublicKeyFile) {
    try {
      trusted = createPublicKey(readKeyFile('RASTRO_DIGEST_PUBLIC_KEY_FILE', config.digestPublicKeyFile));
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError('RASTRO_DIGEST_PUBLIC_KEY_FILE is not a PEM public key');
    }
  } else if (signing) trusted = createPublicKey(signing);
  return { signing, trusted };
}

/**
 * What `serve` runs for the trail: the sealer (RASTRO_SEALER, on by default), and the digest
 * published every RASTRO_DIGEST_INTERVAL_SECONDS to RASTRO_DIGEST_PUBLISH (a folder, or the broker).
 */
export async function startTrailLoops(store: EventStore, config: RastroConfig, publisher: Publisher | undefined, log: FastifyBaseLogger): Promise<{ sealer?: Sealer; stop(): Promise<void> }> {
  const { signing } = digestKeys(config);
  const sealer = config.sealer
    ? await startSealer({ store, onError: (err) => log.warn({ error: { message: (err as Error).message } }, 'trail seal failed; backing off') })
    : undefined;
  let timer: NodeJS.Timeout | undefined;
  const target = config.digestPublish === 'broker' ? (publisher ? { publisher } : undefined) : config.digestPublish;
  if (config.digestPublish === 'broker' && !publisher) log.warn('RASTRO_DIGEST_PUBLISH=broker, but this serve runs no relay (RASTRO_RELAY=off): digests are not published');
  if (target) {
    let last = 0;
    const publish = async () => {
      const digest = await takeDigest(store, { key: signing });
      if (!digest || digest.block === last) return;
      const where = await publishDigest(store, digest, target);
      last = digest.block;
      log.info({ trail: { block: digest.block, where } }, 'trail digest published');
    };
    const run = () => void publish().catch((err: unknown) => log.warn({ error: { message: (err as Error).message } }, 'trail digest not published; will try again'));
    timer = setInterval(run, config.digestIntervalSeconds * 1000);
    timer.unref();
  }
  return {
    sealer,
    async stop() {
      clearInterval(timer);
      await sealer?.stop();
    },
  };
}
