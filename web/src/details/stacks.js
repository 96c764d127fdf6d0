// Every rank's stack of a running job, merged by the server (mpijob/api/trainer/stacks.py: the StackDump):
// what the Stacks tab asks and how it words a frame. Reading them takes what `kubectl exec` takes.
import { DASHBOARD } from '../api.js';

/** The server's endpoint for a job's stacks (POST: every rank is paused for a moment while it is read). */
export const stacksPath = (namespace, name) => `${DASHBOARD}/namespaces/${namespace}/trainjobs/${name}/stacks`;

/** The access review that says whether the user may read them: `create` on `pods/exec` in the namespace. */
export const execAttributes = (namespace) => ({ verb: 'create', resource: 'pods', subresource: 'exec', namespace });

/** `read_batch (prog.py:4)`, as `mpijob debug stacks` prints a frame. */
export const frameText = (f) => (f.where ? `${f.function} (${f.where})` : f.function);

/** The line above the groups: how many ranks, how long, how many distinct stacks. */
export function summary(dump) {
  const groups = (dump.groups || []).length;
  return `${dump.ranks} ranks read in ${dump.seconds}s: ${groups} distinct stack${groups === 1 ? '' : 's'}, `
    + 'the odd ones out first, each from the outermost call down to where the rank is now.';
}
