// The guided form's fields, each with its help, its hint and the server's errors for its field.
import {
  FormGroup, FormSelect, FormSelectOption, Grid, GridItem, HelperText, HelperTextItem, TextArea, TextInput,
} from '@patternfly/react-core';
import { GPU, LABEL_PRIORITY, LABEL_QUEUE } from '../model.js';
import EnvRows from './EnvRows.jsx';
import Field, { Help } from './Field.jsx';
import { LINKS } from './links.js';

const RESOURCE_FIELDS = [
  ['gpu', GPU, 'GPUs per node', 'e.g. 1', 'Whole NVIDIA GPUs for each node (nvidia.com/gpu). Kueue admits the job only when its queue has that many free.'],
  ['cpu', 'cpu', 'CPU per node', 'e.g. 2 or 500m', 'CPU cores for each node: a number, or thousandths with m (500m is half a core).'],
  ['memory', 'memory', 'Memory per node', 'e.g. 8Gi', 'Memory for each node, with a unit: Mi, Gi (powers of 1024) or M, G. Above it the node is OOM-killed.'],
];

// TrainJob has no volume field of its own: volumes go through spec.runtimePatches (or a runtime),
// and the local cluster refuses both runtime patches and volumes, so the form says so, not more.
function VolumesNote() {
  return (
    <FormGroup label="Volumes" fieldId="job-volumes" role="group"
      labelHelp={(
        <Help label="Volumes" links={LINKS.volumes}>
          The local cluster mounts no volumes yet and refuses a job that asks for one. A pod sees this
          machine&apos;s files: keep data in a directory its user may read.
        </Help>
      )}>
      <HelperText id="job-volumes"><HelperTextItem>
        Not available on the local cluster: a job reads and writes this machine&apos;s files.
      </HelperTextItem></HelperText>
    </FormGroup>
  );
}

/** `choices`: {namespaces, runtimes: [{key, label}], queues, priorities, defaults: {numNodes, numProcPerNode}}. */
export default function JobForm({ form, set, errors, choices }) {
  const text = (key) => ({ value: form[key], onChange: (_e, v) => set({ [key]: v }) });
  const { namespaces, runtimes, runtimesError, queues, priorities, defaults } = choices;
  const [runtimeKind, runtimeName] = form.runtime.split('/');
  const withCurrent = (list, current) => (current && !list.includes(current) ? [...list, current] : list);
  return (
    <>
      <Field id="job-name" label="Name" path="metadata.name" errors={errors} isRequired
        hint="Lower-case letters, digits and '-', starting with a letter (e.g. resnet-2-nodes)." links={LINKS.name}
        help="The TrainJob's name, unique in its namespace. Its pods are named after it.">
        {(validated) => <TextInput id="job-name" isRequired validated={validated} {...text('name')} />}
      </Field>
      <Field id="job-namespace" label="Namespace" path="metadata.namespace" errors={errors} isRequired
        links={LINKS.namespace} help="Where the job runs: the namespaces in which you may create TrainJobs. Its quota and queues are that namespace's.">
        {(validated) => (
          <FormSelect id="job-namespace" validated={validated} {...text('namespace')}>
            {namespaces.length === 0 && <FormSelectOption value="" label="No namespace allows you to create jobs" isDisabled />}
            {namespaces.map((n) => <FormSelectOption key={n} value={n} label={n} />)}
          </FormSelect>
        )}
      </Field>
      <Field id="job-runtime" label="Runtime" path="spec.runtimeRef" errors={errors} isRequired links={LINKS.runtime}
        hint={runtimesError ? `The runtimes could not be listed (${runtimesError}): type the name of one.`
          : 'mpi-distributed runs your command with mpirun on a launcher and the nodes.'}
        help="The training runtime the job starts from: its framework (mpi, torch, ...), image and defaults. Cluster runtimes are for every namespace; namespace runtimes only for theirs.">
        {(validated) => (runtimesError ? (
          <TextInput id="job-runtime" validated={validated} value={runtimeName}
            onChange={(_e, v) => set({ runtime: `${runtimeKind}/${v.trim()}` })} />
        ) : (
          <FormSelect id="job-runtime" validated={validated} {...text('runtime')}>
            {withCurrent(runtimes.map((r) => r.key), form.runtime).map((key) => {
              const r = runtimes.find((x) => x.key === key);
              return <FormSelectOption key={key} value={key} label={r ? r.label : `${key.split('/')[1]} (not found)`} />;
            })}
          </FormSelect>
        ))}
      </Field>
      <Field id="job-image" label="Image" path="spec.trainer.image" errors={errors} links={LINKS.image}
        hint="Empty: the runtime's image."
        help="The container image of the trainer (spec.trainer.image). The local cluster records it but runs the program on this machine's files, as a pod there sees them.">
        {(validated) => <TextInput id="job-image" validated={validated} placeholder="ghcr.io/kubeflow/trainer/mpi-runtime" {...text('image')} />}
      </Field>
      <Field id="job-command" label="Command" path="spec.trainer.command" errors={errors} links={LINKS.command}
        hint="One argument per line, e.g. mpirun, then python, then train.py, each on its own line. No shell quoting: a line is one argument as it stands."
        help={(<>The program the launcher runs (<code>spec.trainer.command</code>). With the MPI runtime start it with <code>mpirun</code>: it starts one rank per slot on every node. Empty: the runtime&apos;s own command. An argument that spans lines needs the YAML tab.</>)}>
        {(validated) => (
          <TextArea id="job-command" className="mpijob-mono" rows={5} resizeOrientation="vertical" validated={validated}
            placeholder={'mpirun\npython\ntrain.py'} {...text('command')} />
        )}
      </Field>
      <Grid hasGutter md={6}>
        <GridItem>
          <Field id="job-nodes" label="Nodes" path="spec.trainer.numNodes" errors={errors} links={LINKS.numNodes}
            hint={`Empty: the runtime's ${defaults.numNodes ?? 1}.`}
            help="How many nodes (pods) run the job; each gets the resources below. The MPI launcher runs as one of them.">
            {(validated) => <TextInput id="job-nodes" type="number" min={1} validated={validated} placeholder={String(defaults.numNodes ?? 1)} {...text('numNodes')} />}
          </Field>
        </GridItem>
        <GridItem>
          <Field id="job-procs" label="Processes per node" path="spec.trainer.numProcPerNode" errors={errors} links={LINKS.numProcPerNode}
            hint={`MPI slots per node; empty: the runtime's ${defaults.numProcPerNode ?? 1}.`}
            help="How many ranks mpirun may start on each node (the slots of the hostfile): usually the GPUs per node. Nodes × processes is the MPI world size.">
            {(validated) => <TextInput id="job-procs" type="number" min={1} validated={validated} placeholder={String(defaults.numProcPerNode ?? 1)} {...text('numProcPerNode')} />}
          </Field>
        </GridItem>
      </Grid>
      <Grid hasGutter md={4}>
        {RESOURCE_FIELDS.map(([key, resource, label, placeholder, help]) => (
          <GridItem key={key}>
            <Field id={`job-${key}`} label={label} path={`spec.trainer.resourcesPerNode.limits[${resource}]`} errors={errors}
              links={LINKS.resources} help={help} hint="Empty: the runtime's.">
              {(validated) => <TextInput id={`job-${key}`} validated={validated} placeholder={placeholder} {...text(key)} />}
            </Field>
          </GridItem>
        ))}
      </Grid>
      <EnvRows rows={form.env} onChange={(env) => set({ env })} errors={errors} />
      <VolumesNote />
      <Grid hasGutter md={6}>
        <GridItem>
          <Field id="job-queue" label="Queue" path={`metadata.labels[${LABEL_QUEUE}]`} errors={errors} links={LINKS.queue}
            hint={queues.error ? `The queues could not be listed (${queues.error}): type a LocalQueue's name, or leave it empty.` : 'Kueue admits the job from this LocalQueue when its quota allows.'}
            help={(<>The Kueue LocalQueue of the namespace that admits the job (label <code>{LABEL_QUEUE}</code>). Without one, the local cluster puts it in the namespace&apos;s <code>user-queue</code>.</>)}>
            {(validated) => (queues.error ? <TextInput id="job-queue" validated={validated} {...text('queue')} /> : (
              <FormSelect id="job-queue" validated={validated} {...text('queue')}>
                <FormSelectOption value="" label="No queue label" />
                {withCurrent(queues.names, form.queue).map((q) => <FormSelectOption key={q} value={q} label={q} />)}
              </FormSelect>
            ))}
          </Field>
        </GridItem>
        <GridItem>
          <Field id="job-priority" label="Priority" path={`metadata.labels[${LABEL_PRIORITY}]`} errors={errors} links={LINKS.priority}
            hint={priorities.error ? `The priority classes could not be listed (${priorities.error}): type one's name, or leave it empty.` : 'Higher priority jobs are admitted first, and may preempt lower ones.'}
            help={(<>A Kueue WorkloadPriorityClass (label <code>{LABEL_PRIORITY}</code>): the order of admission in the queue, and which jobs Kueue may preempt for it.</>)}>
            {(validated) => (priorities.error ? <TextInput id="job-priority" validated={validated} {...text('priority')} /> : (
              <FormSelect id="job-priority" validated={validated} {...text('priority')}>
                <FormSelectOption value="" label="Default priority" />
                {withCurrent(priorities.names, form.priority).map((p) => <FormSelectOption key={p} value={p} label={p} />)}
              </FormSelect>
            ))}
          </Field>
        </GridItem>
      </Grid>
    </>
  );
}
