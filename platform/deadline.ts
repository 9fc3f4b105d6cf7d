// Waiting on work that may never settle (a client stuck on a dead dependency) without hanging the caller.

/** Whether `p` settles, either way, within `ms`; the timer never keeps the process alive. */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    deadline,
  ]);
  clearTimeout(timer);
  return settled;
}
