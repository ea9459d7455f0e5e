// The fleet pre-warm on one node: follows the ImagePrewarm objects, runs this node's part of each (see
// node-part.ts) and, when this node is the prewarm's summarizer, writes its status. No central controller:
// agents coordinate through slot Leases and read each other's NodePrewarm records only for the seeds.
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import { isForbidden, kubeError } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import type { FleetApi, PrewarmFollower, SlotLease } from './fleet-api.js';
import type { FleetPuller } from './fleet-puller.js';
import { NodeRecord } from './node-record.js';
import { stepNodePart, type NodePartDeps } from './node-part.js';
import type { AccessReviewer } from '../../k8s/access-review.js';
import { checkPrewarmRequester } from './prewarm-access.js';
import { keyringFromSecrets } from './pull-secrets.js';
import { SlotClaimer, slotFree } from './slots.js';
import type { PrewarmMetrics } from './prewarm-metrics.js';
import type { PrewarmPins } from './prewarm-pins.js';
import { isSummarizer, sameSummary, summarize } from './summary.js';
import { TargetCache } from './targets.js';
import type { ImagePrewarm } from './types.js';
import { wakePart, type Part } from './part-wake.js';
import type { FleetOptions } from './fleet-options.js';

export { FLEET_DEFAULTS, type FleetOptions } from './fleet-options.js';

/** Runs this node's part of every ImagePrewarm until stopped. */
export class FleetAgent {
  private readonly abort = new AbortController();
  private readonly parts = new Map<string, Part>();
  private readonly deps: NodePartDeps;
  private loop: Promise<void> | undefined;
  /** Slot Leases that name this node (handed to it, or held by it), by prewarm, from the standing watch. */
  private readonly handed = new Map<string, SlotLease>();
  /** Per prewarm, the resourceVersion of the handed Lease a step has already used (until the watch shows it moved on). */
  private readonly spent = new Map<string, string>();
  private turns: PrewarmFollower | undefined;
  private turnsListed!: () => void;
  private readonly turnsFirstList: Promise<void>;
  private recordRead: Promise<void> | undefined;
  private prewarmsListed = false;
  /** API requests made by this agent's list loop and summaries (the parts count theirs in deps). */
  requests = 0;

  constructor(
    private readonly api: FleetApi,
    puller: FleetPuller,
    private readonly opts: FleetOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics?: PrewarmMetrics,
    /** Checks each prewarm's creator before its Secrets are read (the daemon always passes one). */
    access?: AccessReviewer,
    /** The prewarm pins of this node: swept after each list, so that a pin goes with its prewarm. */
    private readonly pins?: PrewarmPins,
  ) {
    this.turnsFirstList = new Promise<void>((r) => (this.turnsListed = r));
    this.deps = {
      api,
      node: opts.node,
      record: new NodeRecord(api, opts.node),
      slots: new SlotClaimer(api, opts.leaseNamespace, opts.node, opts.leaseSeconds, clock),
      puller,
      targets: new TargetCache(api, clock, opts.targetsTtlMs),
      clock,
      random: opts.random,
      log,
      keyring: async (pw) => {
        if (access) await checkPrewarmRequester(access, pw);
        return keyringFromSecrets(api, pw.spec.imagePullSecrets);
      },
      pollMs: opts.pollMs,
      idleMs: opts.idleMs,
      seedGoneMs: opts.seedGoneMs,
      leaseSeconds: opts.leaseSeconds,
      backoffBaseMs: opts.backoffBaseMs,
      progressEveryMs: opts.progressEveryMs,
      maxPollMs: opts.maxPollMs,
      seedsDone: new Set(),
      handed: (prewarm) => {
        const l = this.handed.get(prewarm);
        return l && this.spent.get(prewarm) !== l.resourceVersion ? l : undefined;
      },
      spend: (l) => this.spent.set(l.prewarm, l.resourceVersion),
      seedChecks: new Map(),
      chain: new Map(),
    };
  }

  /**
   * Starts following the ImagePrewarms, and the slot Leases handed to this node, in the background; reads this
   * node's record once (not once per prewarm).
   */
  start(): void {
    if (this.loop) return;
    this.recordRead = this.deps.record.load().catch(() => undefined); // read again at the first step when it failed
    this.followTurns();
    this.loop = this.run();
  }

  /** Resolves once started, this node's record read, and the slot Leases that name it listed (or failed to). */
  async ready(): Promise<void> {
    await Promise.all([this.turnsFirstList, this.recordRead]);
  }

  /** The standing watch of the slot Leases whose turn label names this node: a hand-on wakes the prewarm's part. */
  private followTurns(): void {
    let warned = false;
    this.turns = this.api.followTurns(
      this.opts.leaseNamespace,
      this.opts.node,
      (leases) => {
        warned = false;
        this.turnsListed();
        const now = new Map<string, SlotLease>();
        for (const l of leases) if (l.holder === this.opts.node) now.set(l.prewarm, l);
        for (const [prewarm, l] of now) {
          const before = this.handed.get(prewarm);
          this.handed.set(prewarm, l);
          if (before?.resourceVersion === l.resourceVersion) continue;
          if (this.parts.has(prewarm)) this.wake(prewarm, 0);
          else if (this.prewarmsListed && !slotFree(l, this.clock.now())) void this.giveBack(l); // its prewarm is gone
        }
        for (const prewarm of [...this.handed.keys()]) if (!now.has(prewarm)) this.handed.delete(prewarm);
      },
      (f) => {
        this.turnsListed(); // not listed: the parts find their slots by reading them (chainMove)
        if (!warned) this.log.debug('watch of the prewarm slots handed to this node failed; listing and watching again with back-off', { error: asAgentError(f.error).message, retryInMs: f.retryInMs });
        warned = true;
      },
    );
  }

  private async giveBack(l: SlotLease): Promise<void> {
    await this.deps.slots.release(l).catch(() => undefined);
  }

  /** Stops every part; pulls under way are abandoned by this caller, held slots expire. */
  async stop(): Promise<void> {
    this.abort.abort(new Error('agent stopping'));
    for (const p of this.parts.values()) p.stop.abort(new Error('agent stopping'));
    await this.loop;
    await Promise.all([...this.parts.values()].map((p) => p.done));
    await this.turns?.stop().catch(() => undefined);
  }

  /** Runs the prewarm's next step within inMs, or sooner when it is due sooner anyway. */
  private wake(prewarm: string, inMs: number): void {
    const p = this.parts.get(prewarm);
    if (p) wakePart(p, this.clock, inMs);
  }

  private async run(): Promise<void> {
    // One list and one long-lived watch; every change of any ImagePrewarm (the summaries included) arrives
    // here without a request of this agent's.
    this.requests++;
    // One line per streak of failures, not one per retry: an agent without the fleet's RBAC (or a cluster
    // without its CRD) says so once and checks again every few minutes, quietly.
    let warned = false;
    const follower = this.api.followPrewarms(
      (items) => {
        if (warned) this.log.info('following ImagePrewarms again');
        warned = false;
        this.sync(items);
        this.prewarmsListed = true;
      },
      (f) => {
        this.requests++;
        if (warned) return;
        warned = true;
        const retryIn = `${Math.round(f.retryInMs / 1000)} s`;
        if (f.status === 403) {
          this.log.warn(
            'fleet pre-warm idle: this agent may not list ImagePrewarms (403). Apply deploy/optional/fleet-prewarm-rbac.yaml to take part, or start the agent with --no-fleet-prewarm',
            { retryIn },
          );
        } else if (f.status === 404) {
          this.log.warn('fleet pre-warm idle: the ImagePrewarm CRD is not installed (404). Apply deploy/crds/imageprewarm.yaml to use it, or start the agent with --no-fleet-prewarm', { retryIn });
        } else {
          this.log.warn('watch of ImagePrewarms failed; listing and watching again with back-off', { error: kubeError(f.error, 'ImagePrewarms').message, retryIn });
        }
      },
    );
    await new Promise<void>((resolve) => this.abort.signal.addEventListener('abort', () => resolve(), { once: true }));
    await follower.stop().catch(() => undefined);
  }

  /** Starts parts for new or changed prewarms, stops those deleted. */
  private sync(list: ImagePrewarm[]): void {
    void this.pins?.sweep(list);
    const seen = new Set<string>();
    for (const pw of list) {
      const name = pw.metadata.name;
      seen.add(name);
      this.metrics?.progress(name, pw.status);
      const cur = this.parts.get(name);
      const uid = pw.metadata.uid ?? '';
      const gen = pw.metadata.generation ?? 0;
      if (cur && cur.uid === uid && cur.gen === gen) {
        const newSummary = pw.status?.lastSummaryTime !== cur.pw.status?.lastSummaryTime;
        cur.pw = pw; // status and resourceVersion move on
        // A new summary moves the queue: a node far back looks again whether its turn is near.
        if (newSummary) this.wake(name, 0);
        continue;
      }
      this.stopPart(name, cur, 'prewarm changed');
      const stop = new AbortController();
      const part: Part = { uid, gen, pw, stop, done: Promise.resolve() };
      part.done = this.runPart(part, stop.signal);
      this.parts.set(name, part);
    }
    for (const [name, p] of this.parts) {
      if (seen.has(name)) continue;
      this.metrics?.forget(name);
      this.stopPart(name, p, 'prewarm deleted');
      this.parts.delete(name);
      this.deps.targets.drop(name);
      void p.done.then(() => this.deps.record.put(name, undefined)).catch(() => undefined);
    }
  }

  private stopPart(name: string, p: Part | undefined, why: string): void {
    if (!p) return;
    p.stop.abort(new Error(why));
    p.wakeTimer?.abort();
  }

  private async runPart(part: Part, signal: AbortSignal): Promise<void> {
    let lastSummary = 0;
    while (!signal.aborted) {
      let delay: number;
      try {
        delay = await stepNodePart(this.deps, part.pw, signal);
        part.forbiddenSaid = false;
      } catch (err) {
        if (signal.aborted) return;
        if (isForbidden(err)) {
          // Without deploy/optional/fleet-prewarm-rbac.yaml every step is refused the same way: say it once, then
          // try again slowly (the RBAC may be installed later) instead of warning every poll.
          if (!part.forbiddenSaid) {
            part.forbiddenSaid = true;
            this.log.warn('prewarm refused by the API server (403; most often the fleet pre-warm RBAC, deploy/optional/fleet-prewarm-rbac.yaml, is not installed); trying again quietly', {
              prewarm: part.pw.metadata.name,
              retryEverySeconds: this.opts.forbiddenRetryMs / 1000,
              error: asAgentError(err).message,
            });
          }
          delay = this.opts.forbiddenRetryMs;
        } else {
          this.log.warn('prewarm step failed; trying again', { prewarm: part.pw.metadata.name, error: asAgentError(err).message });
          delay = this.opts.pollMs;
        }
      }
      if (this.clock.now() - lastSummary >= this.opts.summaryEveryMs) {
        lastSummary = this.clock.now();
        await this.summarize(part.pw).catch((err: unknown) => this.log.debug('prewarm summary not written', { prewarm: part.pw.metadata.name, error: asAgentError(err).message }));
      }
      if (part.woken) {
        part.woken = false;
        continue;
      }
      part.nap = new AbortController();
      try {
        await this.clock.sleep(part.forbiddenSaid ? delay : Math.min(delay, this.opts.summaryEveryMs), AbortSignal.any([signal, part.nap.signal]));
      } catch {
        if (signal.aborted) return;
      } finally {
        part.nap = undefined;
      }
    }
  }

  /** Writes the prewarm's status when this node is its summarizer and the sums changed. */
  private async summarize(pw: ImagePrewarm): Promise<void> {
    const order = await this.deps.targets.order(pw);
    if (!isSummarizer(this.opts.node, order, pw.status, this.clock.now(), this.opts.summaryEveryMs * 3)) return;
    this.requests++;
    const status = summarize(pw, order, await this.api.listNodePrewarms());
    if (sameSummary(pw.status, status) && pw.status?.summarizedBy === this.opts.node) return;
    status.summarizedBy = this.opts.node;
    status.lastSummaryTime = new Date(this.clock.now()).toISOString();
    this.requests++;
    await this.api.writePrewarmStatus(pw.metadata.name, pw.metadata.resourceVersion ?? '', status, pw);
    pw.status = status;
    this.metrics?.progress(pw.metadata.name, status);
  }

  /** Requests this agent has made to the API server so far. */
  requestCount(): number {
    return this.requests + this.deps.targets.requests + this.deps.record.writes;
  }
}
