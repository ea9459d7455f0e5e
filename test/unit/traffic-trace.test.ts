// The traffic test's data-plane trace reads iptables-save and /proc/net/nf_conntrack text; these are its parsers,
// on lines as kube-proxy 1.36 (iptables-nft) and a 6.18 kernel wrote them on the test cluster.
import assert from 'node:assert/strict';
import { describeStray, failureEvents, serviceRules, strayEntries, type TracedService } from '../support/traffic-trace.js';

const svc: TracedService = { namespace: 'ktraffic-1', name: 'web', clusterIp: '10.0.0.57', port: 80, nodeIp: '10.88.78.1', nodePort: 31234 };

const NAT = [
  '-A KUBE-NODEPORTS -p tcp -m comment --comment "ktraffic-1/web" -m tcp --dport 31234 -j KUBE-EXT-ABC',
  '-A KUBE-SERVICES -d 10.0.0.57/32 -p tcp -m comment --comment "ktraffic-1/web cluster IP" -m tcp --dport 80 -j KUBE-SVC-ABC',
  '-A KUBE-SVC-ABC ! -s 10.88.78.0/24 -d 10.0.0.57/32 -p tcp -m comment --comment "ktraffic-1/web cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ',
  '-A KUBE-SVC-ABC -m comment --comment "ktraffic-1/web -> 10.88.78.56:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-ONE',
  '-A KUBE-SVC-ABC -m comment --comment "ktraffic-1/web -> 10.88.78.57:8080" -j KUBE-SEP-TWO',
].join('\n');

describe('traffic trace parsers', () => {
  it("reads a Service's endpoints and its ClusterIP and NodePort rules out of the nat table", () => {
    assert.deepEqual(serviceRules(NAT, svc), { endpoints: ['10.88.78.56:8080', '10.88.78.57:8080'], clusterIpRule: true, nodePortRule: true });
    assert.deepEqual(serviceRules('', svc), { endpoints: [], clusterIpRule: false, nodePortRule: false });
  });

  it('keeps the conntrack entries not in TIME_WAIT, saying where each sends its client port', () => {
    const ct = [
      'ipv4     2 tcp      6 119 SYN_SENT src=10.88.78.1 dst=10.88.78.1 sport=40000 dport=31234 [UNREPLIED] src=10.88.78.1 dst=10.88.78.1 sport=31234 dport=40000 mark=0 zone=0 use=2',
      'ipv4     2 tcp      6 117 TIME_WAIT src=10.88.78.1 dst=10.88.78.1 sport=40002 dport=31234 src=10.88.78.56 dst=10.88.78.1 sport=8080 dport=51000 [ASSURED] mark=0 zone=0 use=2',
      'ipv4     2 tcp      6 9 CLOSE src=192.0.2.2 dst=10.0.0.57 sport=41908 dport=80 src=10.88.78.57 dst=10.88.78.1 sport=8080 dport=7001 [ASSURED] mark=0 zone=0 use=2',
      'ipv4     2 tcp      6 9 CLOSE src=192.0.2.2 dst=10.0.0.99 sport=41910 dport=80 src=10.88.78.9 dst=10.88.78.1 sport=8080 dport=7002 [ASSURED] mark=0 zone=0 use=2',
    ].join('\n');
    assert.deepEqual([...strayEntries(ct, svc).values()], [
      { client: 'nodePort', state: 'SYN_SENT', port: 40000, to: 'the host itself' },
      { client: 'clusterIp', state: 'CLOSE', port: 41908, to: '10.88.78.57:8080' },
    ]);
  });

  it('names the client ports of stray entries that earlier answered connections used, leaving out the kept-alive lanes', () => {
    const stray = [
      { client: 'nodePort' as const, state: 'SYN_SENT', port: 40000, to: 'the host itself' },
      { client: 'clusterIp' as const, state: 'ESTABLISHED', port: 50000, to: '10.88.78.56:8080' },
    ];
    const tallies = {
      nodePort: { ok: 1, failed: 0, errors: {}, longestGapMs: 0, log: [{ at: 1, end: 2, pod: 'web-0', localPort: 40000 }] },
      keepAlive: { ok: 1, failed: 0, errors: {}, longestGapMs: 0, log: [{ at: 1, end: 2, pod: 'web-0', localPort: 50000 }] },
    };
    assert.equal(describeStray(stray, tallies), 'nodePort SYN_SENT to the host itself: 1, ports 40000 (answered by web-0)');
    assert.equal(describeStray([], tallies), 'none');
  });

  it('folds failures of one kind within 100 ms of each other into one event, counting the answers in between', () => {
    const log = [
      { at: 1000, end: 1001, error: 'ECONNREFUSED' },
      { at: 1010, end: 1011, pod: 'web-1' },
      { at: 1020, end: 1021, error: 'ECONNREFUSED' },
      { at: 1500, end: 1501, error: 'HTTP 404', server: 'keryx' },
    ];
    assert.deepEqual(failureEvents('nodePort', log), [
      { at: 1000, text: 'nodePort: 2 × ECONNREFUSED, sent until +20 ms, 1 answered in between' },
      { at: 1500, text: 'nodePort: 1 × HTTP 404 (Server: keryx)' },
    ]);
  });
});
