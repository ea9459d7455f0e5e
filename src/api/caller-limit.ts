// A bound on the calls one caller may have open at once (streams included): the next one is refused with
// ResourceExhausted until one ends.
import type * as grpc from '@grpc/grpc-js';
import { AgentError } from '../errors.js';

/** Who a call comes from: the peer's address without its port (all callers of a unix socket are one). */
export function callerOf(call: { getPeer(): string }): string {
  const peer = call.getPeer();
  return peer.startsWith('unix:') ? 'unix' : peer.replace(/:\d+$/, '');
}

/** Counts open calls per caller. */
export class CallerLimit {
  private readonly open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Counts a call of caller; returns its release (idempotent). ResourceExhausted when caller is at the limit. */
  enter(caller: string): () => void {
    const n = this.open.get(caller) ?? 0;
    if (n >= this.max) {
      throw new AgentError('ResourceExhausted', `too many open calls from this caller (${n}, at most ${this.max}); wait for some to end`);
    }
    this.open.set(caller, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.open.get(caller) ?? 1) - 1;
      if (left <= 0) this.open.delete(caller);
      else this.open.set(caller, left);
    };
  }

  /** A unary handler counted against its caller. */
  unary<Req, Res>(h: grpc.handleUnaryCall<Req, Res>, toError: (err: unknown) => grpc.ServiceError): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      let release: () => void;
      try {
        release = this.enter(callerOf(call));
      } catch (err) {
        callback(toError(err));
        return;
      }
      h(call, (err, value, trailer, flags) => {
        release();
        callback(err, value, trailer, flags);
      });
    };
  }

  /** A server-streaming handler counted against its caller until the stream ends in any way. */
  stream<Req, Res>(h: grpc.handleServerStreamingCall<Req, Res>, toError: (err: unknown) => grpc.ServiceError): grpc.handleServerStreamingCall<Req, Res> {
    return (call) => this.untilEnd(call, toError, () => h(call));
  }

  /** A bidirectional-streaming handler counted against its caller until the stream ends in any way. */
  duplex<Req, Res>(h: grpc.handleBidiStreamingCall<Req, Res>, toError: (err: unknown) => grpc.ServiceError): grpc.handleBidiStreamingCall<Req, Res> {
    return (call) => this.untilEnd(call, toError, () => h(call));
  }

  /** Counts a streaming call until it finishes, closes, is cancelled or fails, then runs it; refuses it over the limit. */
  private untilEnd(call: { getPeer(): string; once(ev: string, f: () => void): unknown; emit(ev: string, err: unknown): unknown }, toError: (err: unknown) => grpc.ServiceError, run: () => void): void {
    let release: () => void;
    try {
      release = this.enter(callerOf(call));
    } catch (err) {
      call.emit('error', toError(err));
      return;
    }
    for (const ev of ['finish', 'close', 'cancelled', 'error']) call.once(ev, release);
    run();
  }
}
