// Bounds that hold end to end (issue 28, finding 4): what a valid InPlaceRollout makes (ContainerRestart names
// and deadlines, its own status) within the limits of the CRDs that take it, read from deploy/crds itself.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';
import { MAX_NAME, prewarmName, restartName } from '../../src/controllers/rollout/names.js';
import { CR_MAX_ACTIVE_DEADLINE_SECONDS, restartObject } from '../../src/controllers/rollout/reconcile.js';
import { boundStatus, boundText, MAX_CONTAINER_NAME, MAX_FAILURES, MAX_PODS_IN_FLIGHT, MAX_REASON, MAX_STATUS_NAME, MAX_STATUS_TEXT } from '../../src/controllers/rollout/status-bounds.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';

const crds = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy/crds');
type Schema = { description?: string; properties?: Record<string, Schema>; items?: Schema; maximum?: number; maxLength?: number; maxItems?: number; x_kubernetes_validations?: { rule: string }[] };
/** The CRD's schema, as client-node's typed model holds it (x-kubernetes-validations as x_kubernetes_validations). */
const schemaOf = (file: string): Schema =>
  (loadYaml(readFileSync(path.join(crds, file), 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }).spec.versions[0].schema.openAPIV3Schema;
const at = (s: Schema, ...keys: string[]): Schema => keys.reduce((o, k) => (k === '[]' ? (o.items as Schema) : (o.properties?.[k] as Schema)), s);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe('InPlaceRollout bounds, end to end (deploy/crds)', () => {
  const ipr = schemaOf('inplacerollout.yaml');
  const cr = schemaOf('containerrestart.yaml');

  it("the rollout's strategy bounds are within a ContainerRestart's, and its deadline rule is the ContainerRestart's maximum", () => {
    for (const f of ['gracePeriodSeconds', 'drainSeconds', 'minReadySeconds']) {
      const mine = at(ipr, 'spec', 'strategy', f).maximum ?? Infinity;
      assert.ok(mine <= (at(cr, 'spec', 'strategy', f).maximum ?? Infinity), `strategy.${f}`);
    }
    const crMax = at(cr, 'spec', 'activeDeadlineSeconds').maximum;
    assert.equal(CR_MAX_ACTIVE_DEADLINE_SECONDS, crMax);
    const rules = (at(ipr, 'spec').x_kubernetes_validations ?? []).map((v) => v.rule);
    assert.ok(rules.some((r) => r.includes('progressDeadlineSeconds') && r.includes('minReadySeconds') && r.includes(`<= ${crMax}`)), rules.join('\n'));
    const bare = (x: Schema) => ({ ...x, description: undefined });
    assert.deepEqual(bare(at(ipr, 'spec', 'requester')), bare(at(cr, 'spec', 'requester')), 'the requester a rollout records fits a ContainerRestart');
  });

  it("a rollout stored before the rule (deadline past the maximum) is clamped to the ContainerRestart's maximum", () => {
    const r: InPlaceRollout = { metadata: { name: 'r', namespace: 'ns', uid: 'u' }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, progressDeadlineSeconds: 86_400, strategy: { minReadySeconds: 3600 } } };
    const o = restartObject(r, { kind: 'restart', name: 'n', pod: 'p', podUid: 'x', containers: [{ name: 'app', image: 'a:1' }], revisionHash: 'h', revisionNumber: 2 });
    assert.equal(o.spec.activeDeadlineSeconds, 86_400);
  });

  it('the status caps match the CRD', () => {
    const st = at(ipr, 'status');
    assert.equal(at(st, 'message').maxLength, MAX_STATUS_TEXT);
    assert.equal(at(st, 'failures').maxItems, MAX_FAILURES);
    assert.equal(at(st, 'failures', '[]', 'reason').maxLength, MAX_STATUS_TEXT);
    assert.equal(at(st, 'failures', '[]', 'pod').maxLength, MAX_STATUS_NAME);
    assert.equal(at(st, 'failures', '[]', 'container').maxLength, MAX_CONTAINER_NAME);
    assert.equal(at(st, 'podsInFlight').maxItems, MAX_PODS_IN_FLIGHT);
    assert.equal(at(st, 'conditions', '[]', 'message').maxLength, MAX_STATUS_TEXT);
    assert.equal(at(st, 'conditions', '[]', 'reason').maxLength, MAX_REASON);
    for (const f of ['currentRevision', 'updateRevision', 'coordinator']) assert.equal(at(st, f).maxLength, MAX_STATUS_NAME, f);
  });

  it('a status past every cap is cut to fit by construction, saying how much was left out', () => {
    const long = 'x'.repeat(MAX_STATUS_TEXT + 1);
    const s = boundStatus({
      message: long,
      failures: Array.from({ length: MAX_FAILURES + 5 }, (_, i) => ({ pod: `p${i}`, reason: long })),
      podsInFlight: Array.from({ length: MAX_PODS_IN_FLIGHT + 7 }, (_, i) => `p${i}`),
      conditions: [{ type: 'Progressing', status: 'True', reason: 'Updating', message: long }],
    });
    assert.equal(s.failures?.length, MAX_FAILURES);
    assert.equal(s.podsInFlight?.length, MAX_PODS_IN_FLIGHT);
    assert.ok((s.message ?? '').length <= MAX_STATUS_TEXT);
    assert.match(s.message ?? '', /^\(5 more failures not listed; 7 more pods in flight not listed\) x+\.\.\. \(\d+ more characters\)$/);
    assert.ok(s.failures?.every((f) => f.reason.length <= MAX_STATUS_TEXT));
    assert.ok((s.conditions?.[0].message ?? '').length <= MAX_STATUS_TEXT);
    // At the edge: as it was.
    const edge = 'y'.repeat(MAX_STATUS_TEXT);
    assert.equal(boundText(edge), edge);
    assert.deepEqual(boundStatus({ message: edge, podsInFlight: ['a'], failures: [] }), { message: edge, podsInFlight: ['a'], failures: [] });
  });

  it('ContainerRestart names: at most 253 characters, DNS names, distinct for long names and for names that run into each other', () => {
    const long = 'r'.repeat(253);
    const names = [restartName(long, 'web-0', 7), restartName(long, 'web-1', 7), restartName(long, 'web-0', 8), restartName(`${long.slice(0, 240)}.a`, 'b', 1)];
    for (const n of names) {
      assert.ok(n.length <= MAX_NAME, `${n.length}`);
      assert.match(n, DNS_SUBDOMAIN);
    }
    assert.equal(new Set(names).size, names.length);
    // "a" with pod "b-c-0" and "a-b" with pod "c-0" would both read a-b-c-0-r1.
    assert.notEqual(restartName('a', 'b-c-0', 1), restartName('a-b', 'c-0', 1));
    assert.equal(restartName('roll', 'web-5', 2), restartName('roll', 'web-5', 2), 'fixed by rollout, pod and revision');
  });

  it('ImagePrewarm names: at most 253 characters and distinct for long revision names', () => {
    const uid = '0123abcd-0000-0000-0000-000000000000';
    const a = prewarmName(uid, `${'w'.repeat(250)}-aaa`);
    const b = prewarmName(uid, `${'w'.repeat(250)}-bbb`);
    assert.ok(a.length <= MAX_NAME && b.length <= MAX_NAME);
    assert.notEqual(a, b);
    assert.match(a, DNS_SUBDOMAIN);
    assert.equal(prewarmName(uid, 'web-5d8f'), 'ipr-0123abcd-web-5d8f');
  });
});
