/** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
export const stopSignal = (): Promise<void> =>
  new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
