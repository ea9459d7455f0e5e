// Which ControllerRevision a rollout takes its pods to. A StatefulSet names it in status.updateRevision, which only
// its controller writes. A DaemonSet names none: its controller keeps, as the current revision, the one whose data
// is the DaemonSet's spec.template (it compares its own patch of the template, `{"spec":{"template":{...,
// "$patch":"replace"}}}`, byte for byte), and raises that revision's number above the others'. Anyone who may
// create ControllerRevisions can add one that points at the DaemonSet with any number and any template, so the
// target is the revision whose template equals the DaemonSet's, never merely the newest:
//
//   revisions whose template equals spec.template    the target: the highest numbered (the controller keeps one)
//   others with a lower number                      older revisions (what a pod may still run)
//   others with a higher number                     not the controller's: ignored, and reported in the status
import { sameJson } from '../../same-json.js';
import type { RevisionView, WorkloadView } from './plan-types.js';

/** The target revision, and revisions that claim to be newer than it but are not the template (DaemonSet only). */
export interface TargetChoice {
  target?: RevisionView;
  ignored: RevisionView[];
}

/** The revision the workload asks for: updateRevision (StatefulSet) or the one of its template (DaemonSet). */
export function chooseTarget(w: WorkloadView, revisions: RevisionView[]): TargetChoice {
  if (w.kind === 'StatefulSet') return { target: revisions.find((r) => r.name === w.updateRevision), ignored: [] };
  const byNumber = [...revisions].sort((a, b) => b.revision - a.revision);
  const target = w.template ? byNumber.find((r) => sameJson(r.template, w.template)) : undefined;
  return { target, ignored: target ? byNumber.filter((r) => r.revision > target.revision) : [] };
}

/** The target revision alone (see chooseTarget). */
export function targetRevision(w: WorkloadView, revisions: RevisionView[]): RevisionView | undefined {
  return chooseTarget(w, revisions).target;
}

/** The status message of ignored revisions. */
export function ignoredMessage(w: WorkloadView, target: RevisionView, ignored: RevisionView[]): string {
  const names = ignored.map((r) => `${r.name} (revision ${r.revision})`).join(', ');
  return `ControllerRevision ${names} of DaemonSet ${w.name} claims to be newer than ${target.name} (revision ${target.revision}), but its data is not the DaemonSet's spec.template: not written by the DaemonSet controller, ignored`;
}
