// Mocha reporter: the spec reporter's output, then one plain closing line "N passed, N failed"
// (with ", N skipped" when any test was pending) so a run that executed no test is visible.
'use strict';
const Mocha = require('mocha');
const { Spec } = Mocha.reporters;
const { EVENT_RUN_END } = Mocha.Runner.constants;

class SummaryReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      const skipped = s.pending > 0 ? `, ${s.pending} skipped` : '';
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed${skipped}\n`);
    });
  }
}
module.exports = SummaryReporter;
