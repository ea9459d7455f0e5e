// Follows one ContainerRestart until it finishes: a watch on that object alone, started again (after reading
// the object) whenever it ends before the object does, so an API server restart only delays the outcome.
import { Watch } from '../k8s/client.js';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import { Backoff } from '../backoff.js';
import { apiStatusCode } from '../k8s/api-error.js';
import { containerRestartPath, type ContainerRestartApi } from '../controllers/container-restart/api.js';
import { isFinished, type ContainerRestart } from '../controllers/container-restart/types.js';

type Event = { obj?: ContainerRestart; deleted?: boolean; end?: true; err?: unknown };

/** Every new version of the object, starting after `from`, up to and including the finished one. */
export async function* followContainerRestart(api: ContainerRestartApi, from: ContainerRestart, clock: Clock): AsyncGenerator<ContainerRestart> {
  const ns = from.metadata.namespace ?? 'default';
  const name = from.metadata.name ?? '';
  const watch = new Watch(api.kc);
  const backoff = new Backoff(clock, { initialMs: 250, maxMs: 5000 });
  let rv = from.metadata.resourceVersion ?? '';
  let failures = 0;
  for (;;) {
    const events: Event[] = [];
    let wake: (() => void) | undefined;
    const push = (e: Event) => {
      events.push(e);
      wake?.();
    };
    const ctrl = await watch.watch(
      containerRestartPath(ns),
      { fieldSelector: `metadata.name=${name}`, resourceVersion: rv },
      (type: string, obj: ContainerRestart) => {
        if (type === 'ADDED' || type === 'MODIFIED') push({ obj });
        else if (type === 'DELETED') push({ deleted: true });
        else if (type === 'ERROR') push({ err: Object.assign(new Error('watch error'), { code: (obj as unknown as { code?: number }).code }) });
      },
      (err: unknown) => push({ end: true, err }),
    );
    try {
      for (;;) {
        while (events.length === 0) await new Promise<void>((r) => (wake = r));
        const e = events.shift() as Event;
        if (e.deleted) throw new AgentError('NotFound', `ContainerRestart ${ns}/${name} was deleted before it finished`);
        if (e.obj) {
          failures = 0;
          rv = e.obj.metadata.resourceVersion ?? rv;
          yield e.obj;
          if (isFinished(e.obj.status?.phase)) return;
          continue;
        }
        if (apiStatusCode(e.err) === 410) rv = '';
        else if (e.err) await backoff.wait(++failures);
        break;
      }
    } finally {
      ctrl.abort();
    }
    // The watch ended (timeout, API server gone): read the object, then watch again from its version.
    for (;;) {
      try {
        const cr = await api.get(ns, name);
        rv = cr.metadata.resourceVersion ?? '';
        yield cr;
        if (isFinished(cr.status?.phase)) return;
        break;
      } catch (err) {
        if (!AgentError.is(err, 'Unavailable')) throw err;
        await backoff.wait(++failures);
      }
    }
  }
}
