// src/create/formModel.js (form ⇄ TrainJob, clones, names) and src/create/schema.js (YAML and schema checks).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const f = await src('create/formModel.js');
const s = await src('create/schema.js');
const { GPU, LABEL_PRIORITY, LABEL_QUEUE } = await src('model.js');

const filled = () => ({
  ...f.emptyForm(), name: ' pi ', namespace: 'team-a', image: 'mpi:1', command: 'mpirun\n\n  python  \ntrain.py',
  numNodes: '2', numProcPerNode: 'four', gpu: '1', memory: ' 8Gi ', queue: 'gpu', priority: 'high',
  env: [{ name: 'A', value: '1' }, { name: ' ', value: '' }, { name: 'B ', value: ' x ' }],
});

describe('form → TrainJob', () => {
  test('every field lands where the TrainJob has it; numbers as numbers, the rest as typed', () => {
    assert.deepEqual(f.formToJob(filled()), {
      apiVersion: f.API_VERSION, kind: 'TrainJob',
      metadata: { name: 'pi', namespace: 'team-a', labels: { [LABEL_QUEUE]: 'gpu', [LABEL_PRIORITY]: 'high' } },
      spec: {
        runtimeRef: { name: 'mpi-distributed' },
        trainer: { image: 'mpi:1', command: ['mpirun', 'python', 'train.py'], numNodes: 2, numProcPerNode: 'four',
          resourcesPerNode: { limits: { [GPU]: '1', memory: '8Gi' } }, env: [{ name: 'A', value: '1' }, { name: 'B', value: ' x ' }] },
      },
    });
  });

  test('an empty form makes a bare job; a TrainingRuntime keeps its kind', () => {
    const job = f.formToJob({ ...f.emptyForm(), runtime: 'TrainingRuntime/mine' });
    assert.deepEqual(job.metadata, { name: '' });
    assert.deepEqual(job.spec, { runtimeRef: { name: 'mine', kind: 'TrainingRuntime' } });
  });

  test('envIndexes: which env entry each row became, blank rows -1', () => {
    assert.deepEqual(f.envIndexes(filled().env), [0, -1, 1]);
  });
});

describe('TrainJob → form', () => {
  test('a job made by the form comes back as the same form, nothing uncovered', () => {
    const form = { ...filled(), numProcPerNode: '4' };
    const { form: back, uncovered } = f.jobToForm(f.formToJob(form));
    assert.deepEqual(uncovered, []);
    assert.equal(back.name, 'pi');
    assert.equal(back.command, 'mpirun\npython\ntrain.py');
    assert.equal(back.numProcPerNode, '4');
    assert.equal(back.memory, '8Gi');
    assert.equal(back.runtime, f.DEFAULT_RUNTIME);
    assert.deepEqual(back.env, [{ name: 'A', value: '1' }, { name: 'B', value: ' x ' }]);
  });

  test('what the form cannot show is named, so the YAML editor takes the job', () => {
    const job = {
      apiVersion: f.API_VERSION, kind: 'TrainJob',
      metadata: { name: 'x', annotations: { a: 'b' }, labels: { team: 'ml' } },
      spec: { runtimeRef: { name: 'r' }, suspend: true, managedBy: 'someone/else',
        trainer: { command: ['echo', 'a b '], numNodes: '2', env: [{ name: 'S', valueFrom: { secretKeyRef: {} } }], resourcesPerNode: { limits: { 'example.com/fpga': 1 }, requests: {} } } },
    };
    assert.deepEqual(f.jobToForm(job).uncovered.sort(), [
      'metadata.annotations', 'metadata.labels.team', 'spec.managedBy', 'spec.suspend',
      'spec.trainer.command (an argument spans lines, is empty or has spaces at its ends)', 'spec.trainer.env (valueFrom)',
      'spec.trainer.numNodes', 'spec.trainer.resourcesPerNode.limits.example.com/fpga', 'spec.trainer.resourcesPerNode.requests',
    ]);
    assert.deepEqual(f.jobToForm([]).uncovered, ['(not an object)']);
    assert.deepEqual(f.jobToForm({ apiVersion: 'v1', kind: 'Pod' }).uncovered, ['apiVersion/kind']);
  });

  test('the defaults the server fills in are covered', () => {
    const job = f.formToJob({ ...f.emptyForm(), name: 'x' });
    job.spec.managedBy = 'trainer.kubeflow.org/trainjob-controller';
    job.spec.runtimeRef.apiGroup = 'trainer.kubeflow.org';
    assert.deepEqual(f.jobToForm(job).uncovered, []);
  });
});

describe('clones', () => {
  test('cleanForClone drops state, server annotations and defaults; keeps the author\'s fields', () => {
    const job = {
      apiVersion: f.API_VERSION, kind: 'TrainJob',
      metadata: { name: 'pi', namespace: 'a', uid: 'u', resourceVersion: '9', labels: { team: 'ml' },
        annotations: { 'mpijob.io/requester': 'alice', 'kubectl.kubernetes.io/last-applied-configuration': '{}', mine: 'yes' } },
      spec: { managedBy: 'trainer.kubeflow.org/trainjob-controller', suspend: true,
        runtimeRef: { name: 'mpi', kind: 'ClusterTrainingRuntime', apiGroup: 'trainer.kubeflow.org' }, trainer: { numNodes: 2 } },
      status: { conditions: [] },
    };
    const clone = f.cleanForClone(job, 'pi-2');
    assert.deepEqual(clone, {
      apiVersion: f.API_VERSION, kind: 'TrainJob',
      metadata: { name: 'pi-2', namespace: 'a', labels: { team: 'ml' }, annotations: { mine: 'yes' } },
      spec: { runtimeRef: { name: 'mpi' }, trainer: { numNodes: 2 } },
    });
    assert.equal(job.spec.suspend, true); // the original is untouched
  });

  test('nextName: the first free NAME-N within 63 characters, a trailing number kept', () => {
    assert.equal(f.nextName('resnet-50', new Set()), 'resnet-50-2');
    assert.equal(f.nextName('pi', new Set(['pi-2', 'pi-3'])), 'pi-4');
    assert.equal(f.nextName('a'.repeat(63), new Set()), `${'a'.repeat(61)}-2`);
    assert.equal(f.nextName(`${'a'.repeat(60)}-bc`, new Set()), `${'a'.repeat(60)}-2`); // cut, no dash doubled
  });
});

describe('YAML checks', () => {
  const text = 'apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: pi\nspec:\n  trainer:\n    numNodes: two\n    env:\n      - name: A\n';

  test('parseYaml: a mapping parses; a list or a syntax error is a problem', () => {
    const ok = s.parseYaml(text);
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.value.spec.trainer.numNodes, 'two');
    const list = s.parseYaml('- a\n- b\n');
    assert.equal(list.value, null);
    assert.match(list.problems[0].message, /must be one TrainJob/);
    const bad = s.parseYaml('a: [1, 2\n');
    assert.equal(bad.value, null);
    assert.equal(bad.problems[0].source, 'YAML');
  });

  test('fieldPath and locate: a server\'s field path to the text it names', () => {
    assert.deepEqual(s.fieldPath('spec.trainer.env[0].name'), ['spec', 'trainer', 'env', 0, 'name']);
    assert.deepEqual(s.fieldPath('spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]'), ['spec', 'trainer', 'resourcesPerNode', 'limits', 'nvidia.com/gpu']);
    const { doc } = s.parseYaml(text);
    const [from, to] = s.locate(doc, text, ['spec', 'trainer', 'numNodes']);
    assert.equal(text.slice(from, to), 'numNodes: two');
    const [f2, t2] = s.locate(doc, text, ['spec', 'trainer', 'env', 0, 'name']);
    assert.equal(text.slice(f2, t2), 'name: A');
    const [f3, t3] = s.locate(doc, text, ['spec', 'nothing', 'here']); // the nearest ancestor's first line
    assert.equal(text.slice(f3, t3), 'spec:');
  });

  test('build and schemaErrors: $refs inlined, quantities take numbers, the deepest error per branch in plain words', () => {
    const openapi = { components: { schemas: {
      Job: { 'x-kubernetes-group-version-kind': [{ kind: 'TrainJob' }], type: 'object', required: ['spec'],
        properties: { spec: { $ref: '#/components/schemas/Spec' } } },
      Spec: { type: 'object', properties: {
        trainer: { type: 'object', properties: { numNodes: { type: 'integer' },
          limits: { type: 'object', additionalProperties: { $ref: '#/components/schemas/Quantity' } } } },
        parent: { $ref: '#/components/schemas/Spec' } } },
      Quantity: { type: 'string', description: 'Quantity is a fixed-point representation of a number.' },
    } } };
    const v = s.build(openapi);
    assert.deepEqual(s.schemaErrors(v, { spec: { trainer: { numNodes: 2, limits: { cpu: 2, memory: '1Gi' } } } }), []);
    assert.deepEqual(s.schemaErrors(v, { spec: { trainer: { numNodes: 'two' } } }),
      [{ path: ['spec', 'trainer', 'numNodes'], message: 'must be of type integer, not string' }]);
    assert.deepEqual(s.schemaErrors(v, {}), [{ path: [], message: 'the required field "spec" is missing' }]);
    assert.throws(() => s.build({ components: { schemas: {} } }), /has no TrainJob schema/);
  });
});

test('every help link of the create form names a page and an address', async () => {
  const { LINKS } = await src('create/links.js');
  for (const [field, links] of Object.entries(LINKS)) {
    assert.ok(links.length > 0, field);
    for (const [title, href] of links) assert.match(href, /^(#\/docs\/[\w./-]+(#[\w-]+)?|https:\/\/\S+)$/, `${field}: ${title}`);
  }
});
