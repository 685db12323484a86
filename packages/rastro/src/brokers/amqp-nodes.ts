import amqp, { type ChannelModel } from 'amqplib';

/**
 * The nodes of a RabbitMQ cluster as one URL names them: several `amqp://` URLs separated by
 * commas. A connection goes to the first that answers, starting after the node the last one
 * lost, so a client whose node died moves to the next instead of waiting for it to come back.
 */
export interface AmqpNodes {
  /** Opens a connection to the first node that answers, trying each once; throws the last failure. */
  connect(): Promise<ChannelModel>;
  /** Tells it the current connection was lost: the next `connect` starts at the following node. */
  lost(): void;
  readonly count: number;
}

/** Splits a comma-separated list of `amqp://` or `amqps://` URLs; throws a RangeError on anything else. */
export function amqpUrls(url: string): string[] {
  const urls = url.split(',').map((part) => part.trim()).filter(Boolean);
  if (urls.length === 0 || urls.some((one) => !/^amqps?:\/\//.test(one))) throw new RangeError('url must be one or more amqp:// URLs separated by commas');
  return urls;
}

export function amqpNodes(url: string): AmqpNodes {
  const urls = amqpUrls(url);
  let next = 0;
  let current = 0;
  return {
    count: urls.length,
    async connect() {
      let failure: unknown;
      for (let tried = 0; tried < urls.length; tried++) {
        const i = (next + tried) % urls.length;
        try {
          const connection = await amqp.connect(urls[i]!);
          current = i;
          next = i;
          return connection;
        } catch (err) {
          failure = err;
        }
      }
      // Every node refused: start after this round's first node next time too.
      next = (next + 1) % urls.length;
      throw failure;
    },
    lost() {
      next = (current + 1) % urls.length;
    },
  };
}
