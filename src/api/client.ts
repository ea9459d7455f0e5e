// A typed client of the agent API, used by inplacectl and the tests.
import * as grpc from '@grpc/grpc-js';
import type { ProtoGrpcType } from '../gen/agent.js';
import type { AgentClient as WireClient } from '../gen/inplace/v1/Agent.js';
import type { ListOperationsResponse__Output } from '../gen/inplace/v1/ListOperationsResponse.js';
import type { ListPodsResponse__Output } from '../gen/inplace/v1/ListPodsResponse.js';
import type { PullImagesRequest } from '../gen/inplace/v1/PullImagesRequest.js';
import type { RestartRequest } from '../gen/inplace/v1/RestartRequest.js';
import type { VersionResponse__Output } from '../gen/inplace/v1/VersionResponse.js';
import { loadProto } from '../proto.js';
import type { PullEvent } from '../pull/types.js';
import { operationFromWire, pullEventFromWire, type OperationView } from './convert.js';
import { fromServiceError } from './status.js';
import { AgentError } from '../errors.js';
import { DEFAULT_AGENT_SOCKET, unixPath } from './address.js';
import { clientCredentials, type ClientTlsFiles } from './tls.js';

export { DEFAULT_AGENT_SOCKET };

/** Client of one agent. Every method throws AgentError. */
export class AgentClient {
  private readonly client: WireClient;
  readonly target: string;

  /** A TCP address needs tls (mutual TLS); throws AgentError(InvalidArgument) without it or with bad files. deadlineMs 0: no deadline. */
  constructor(address: string = DEFAULT_AGENT_SOCKET, private readonly deadlineMs = 30_000, tls: ClientTlsFiles = {}) {
    const proto = grpc.loadPackageDefinition(loadProto('inplace/v1/agent.proto')) as unknown as ProtoGrpcType;
    const sock = unixPath(address);
    this.target = sock ? `unix://${sock}` : address;
    const { credentials, options } = clientCredentials(this.target, tls);
    this.client = new proto.inplace.v1.Agent(this.target, credentials, options);
  }

  private opts(): grpc.CallOptions {
    return this.deadlineMs > 0 ? { deadline: Date.now() + this.deadlineMs } : {};
  }

  /**
   * Resolves once the connection to the agent is up, or has failed (the call that follows then says why, at once);
   * rejects with DeadlineExceeded when it is still connecting after ms (a socket that accepts and never answers).
   * ms 0 waits no time.
   */
  waitReady(ms = this.deadlineMs): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    const channel = this.client.getChannel();
    const deadline = Date.now() + ms;
    const settled = [grpc.connectivityState.READY, grpc.connectivityState.TRANSIENT_FAILURE, grpc.connectivityState.SHUTDOWN];
    return new Promise((resolve, reject) => {
      const check = (err?: Error) => {
        const state = channel.getConnectivityState(true);
        if (settled.includes(state)) return resolve();
        if (err || Date.now() >= deadline) return reject(new AgentError('DeadlineExceeded', `the agent at ${this.target} accepted the connection but did not answer within ${ms / 1000}s`));
        channel.watchConnectivityState(state, deadline, check);
      };
      check();
    });
  }

  private call<Req, Res>(method: (req: Req, opts: grpc.CallOptions, cb: grpc.requestCallback<Res>) => unknown, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      method.call(this.client, req, this.opts(), (err: grpc.ServiceError | null, res?: Res) =>
        err ? reject(fromServiceError(err, this.target)) : resolve(res as Res),
      );
    });
  }

  /** A server stream's messages, converted; ended on the agent too when signal aborts or the caller stops reading. */
  private async *read<W, T>(stream: grpc.ClientReadableStream<W>, convert: (w: W) => T, signal?: AbortSignal): AsyncGenerator<T> {
    signal?.addEventListener('abort', () => stream.cancel());
    try {
      for await (const w of stream) yield convert(w as W);
    } catch (err) {
      throw fromServiceError(err, this.target);
    } finally {
      // A caller that stops reading early (break, return) ends the call on the agent too: leaving the stream
      // only destroys it here, and the agent would count the call as open until the operation ends.
      stream.cancel();
    }
  }

  /** Pods on the agent's node. */
  listPods(): Promise<ListPodsResponse__Output> {
    return this.call(this.client.ListPods, {});
  }

  /** Queues a restart; resolves with the Pending operation. */
  async restart(req: RestartRequest): Promise<OperationView> {
    return operationFromWire(await this.call(this.client.Restart, req));
  }

  /** One operation. */
  async getOperation(id: string): Promise<OperationView> {
    return operationFromWire(await this.call(this.client.GetOperation, { id }));
  }

  /** Operations, newest first. */
  async listOperations(pod = ''): Promise<OperationView[]> {
    const res = await this.call<{ pod: string }, ListOperationsResponse__Output>(this.client.ListOperations, { pod });
    return res.operations.map(operationFromWire);
  }

  /** Asks an operation to stop. */
  async cancelOperation(id: string): Promise<OperationView> {
    return operationFromWire(await this.call(this.client.CancelOperation, { id }));
  }

  /** The operation now and at every change, until it ends. */
  async *watchOperation(id: string, signal?: AbortSignal): AsyncGenerator<OperationView> {
    yield* this.read(this.client.WatchOperation({ id }), operationFromWire, signal);
  }

  /** Pull progress events until every image is done or failed. */
  async *pullImages(req: PullImagesRequest, signal?: AbortSignal): AsyncGenerator<PullEvent> {
    yield* this.read(this.client.PullImages(req), pullEventFromWire, signal);
  }

  /** The agent's version and the runtime it drives. */
  version(): Promise<VersionResponse__Output> {
    return this.call(this.client.Version, {});
  }

  /** Closes the channel. */
  close(): void {
    this.client.close();
  }
}

