// The API server's watch for unit tests of the follower and its callers: each watch request is recorded and
// left open until the test feeds it events or ends it. Integration tests use the real API server.
import type { KubernetesObject } from '../../src/k8s/client.js';
import type { WatchSource } from '../../src/k8s/list-follower.js';

/** One watch request the follower made, which the test ends or feeds. */
export interface WatchCall {
  resourceVersion: string;
  /** The query: resourceVersion, labelSelector, fieldSelector. */
  params: Record<string, unknown>;
  send(type: string, o: KubernetesObject): void;
  end(err: unknown): void;
  aborted(): boolean;
}

/** The API server's watch, scripted: each request is recorded and left open until the test ends it. */
export class FakeWatch implements WatchSource {
  readonly calls: WatchCall[] = [];

  watch(_path: string, params: Record<string, unknown>, cb: (type: string, o: unknown) => void, done: (err: unknown) => void): Promise<AbortController> {
    const ctrl = new AbortController();
    let ended = false;
    this.calls.push({
      resourceVersion: String(params.resourceVersion ?? ''),
      params,
      send: (type, o) => cb(type, o),
      end: (err) => {
        if (ended) return;
        ended = true;
        done(err);
      },
      aborted: () => ctrl.signal.aborted,
    });
    return Promise.resolve(ctrl);
  }
}
