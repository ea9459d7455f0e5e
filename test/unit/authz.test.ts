// The --authz-file policy: validation with messages naming the file and the fault, and who it allows.
import assert from 'node:assert/strict';
import type { PeerCertificate } from 'node:tls';
import { AuthzPolicy, METHOD_PERMISSION, callerLabel, certificateNames } from '../../src/api/authz.js';

const parse = (doc: unknown) => AuthzPolicy.parse(typeof doc === 'string' ? doc : JSON.stringify(doc), '/etc/authz.json');

describe('authz policy', () => {
  it('refuses files that do not validate, naming the file and what is wrong', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['{"read": [', /--authz-file \/etc\/authz\.json: not valid JSON/],
      [[1, 2], /must be a JSON object/],
      [null, /must be a JSON object/],
      [{ reed: ['a'] }, /unknown key "reed"; the keys are read, pull, restart, cancel/],
      [{ read: 'a' }, /"read" must be a list of certificate names/],
      [{ restart: ['ok', ''] }, /"restart"\[1\] must be a non-empty name/],
      [{ cancel: [' padded'] }, /"cancel"\[0\] must be a non-empty name without surrounding spaces/],
      [{ pull: [7] }, /"pull"\[0\] must be a non-empty name/],
      [{ read: ['x'.repeat(1025)] }, /at most 1024 characters/],
    ];
    for (const [doc, re] of cases) assert.throws(() => parse(doc), (e: Error & { kind?: string }) => e.kind === 'InvalidArgument' && re.test(e.message), JSON.stringify(doc)?.slice(0, 40));
  });

  it('allows a permission to a listed name only; an absent key allows nobody; "*" allows any certificate', () => {
    const p = parse({ read: ['*'], restart: ['deployer', 'spiffe://c/ns/ci'] });
    assert.equal(p.allows(['deployer'], 'restart'), true);
    assert.equal(p.allows(['x', 'spiffe://c/ns/ci'], 'restart'), true, 'any of the names counts');
    assert.equal(p.allows(['viewer'], 'restart'), false);
    assert.equal(p.allows(['deployer'], 'cancel'), false, 'no "cancel" key: nobody');
    assert.equal(p.allows(['viewer'], 'read'), true);
    assert.equal(p.allows([], 'read'), true, 'a certificate without names still passed the CA check');
    assert.deepEqual(p.summary(), { read: 1, pull: 0, restart: 2, cancel: 0 });
  });

  it('maps every Agent RPC to a permission, and both reflection versions to "read"', () => {
    const agent = Object.entries(METHOD_PERMISSION).filter(([m]) => m.startsWith('/inplace.v1.Agent/'));
    assert.deepEqual(agent.map(([, p]) => p).sort(), ['cancel', 'pull', 'read', 'read', 'read', 'read', 'read', 'restart']);
    assert.equal(METHOD_PERMISSION['/grpc.reflection.v1.ServerReflection/ServerReflectionInfo'], 'read');
    assert.equal(METHOD_PERMISSION['/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo'], 'read');
    assert.equal(Object.keys(METHOD_PERMISSION).length, 10);
  });

  it('names a caller by subject CN, then DNS and URI SANs (not IPs), quoted values unescaped', () => {
    const cert = { subject: { CN: 'deployer' }, subjectaltname: 'DNS:ci.example, IP Address:10.0.0.1, URI:spiffe://c/ns/ci, DNS:"a, b", DNS:deployer' } as unknown as PeerCertificate;
    assert.deepEqual(certificateNames(cert), ['deployer', 'ci.example', 'spiffe://c/ns/ci', 'a, b']);
    assert.deepEqual(certificateNames(undefined), []);
    assert.deepEqual(certificateNames({} as PeerCertificate), []);
  });

  it('labels callers shortly for messages', () => {
    assert.equal(callerLabel([]), '(no certificate name)');
    assert.equal(callerLabel(['a', 'b', 'c', 'd', 'e']), '"a", "b", "c" and 2 more');
    assert.equal(callerLabel(['x'.repeat(100)]), `"${'x'.repeat(64)}…"`, 'long names cut at 64 characters');
  });
});
