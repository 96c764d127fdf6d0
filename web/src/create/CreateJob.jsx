// #/create and #/create?clone=NS/NAME: a TrainJob from a guided form or from YAML, checked by the
// server (dry run) after every change, created for real by the Create button.
import {
  ActionGroup, Alert, AlertActionCloseButton, Bullseye, Button, Form, HelperText, HelperTextItem, PageSection, Spinner, Title,
  ToggleGroup, ToggleGroupItem,
} from '@patternfly/react-core';
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { create, get, trainjobPath, trainjobsPath } from '../api.js';
import { useCreatableNamespaces } from '../jobs/access.js';
import { useVisibleNamespaces } from '../jobs/useJobs.js';
import { LABEL_PRIORITY, LABEL_QUEUE } from '../model.js';
import { navigate } from '../router.js';
import { DocLinks } from './Field.jsx';
import {
  cleanForClone, emptyForm, envIndexes, formToJob, jobToForm, nextName, RESOURCES,
} from './formModel.js';
import JobForm from './JobForm.jsx';
import { LINKS } from './links.js';
import { useChoices } from './options.js';
import { sortCauses, useDryRun } from './serverCheck.js';

const YamlEditor = lazy(() => import('./YamlEditor.jsx'));
const toYaml = async (obj) => (await import('yaml')).stringify(obj, { lineWidth: 0 });

const FIELD_PATHS = [
  'metadata.name', 'metadata.namespace', 'spec.runtimeRef', 'spec.trainer.image', 'spec.trainer.command',
  'spec.trainer.numNodes', 'spec.trainer.numProcPerNode',
  ...RESOURCES.map(([, r]) => `spec.trainer.resourcesPerNode.limits[${r}]`),
  `metadata.labels[${LABEL_QUEUE}]`, `metadata.labels[${LABEL_PRIORITY}]`,
];

const envPaths = (rows) => envIndexes(rows).filter((i) => i >= 0)
  .flatMap((i) => [`spec.trainer.env[${i}]`, `spec.trainer.env[${i}].name`, `spec.trainer.env[${i}].value`]);

/** Loads NS/NAME as a new job: {job (cleaned, renamed)}. */
async function loadClone(clone) {
  const [namespace, name] = clone.split('/');
  const [job, list] = await Promise.all([get(trainjobPath(namespace, name)), get(trainjobsPath(namespace))]);
  const taken = new Set((list.items || []).map((j) => j.metadata.name));
  return cleanForClone(job, nextName(name, taken));
}

// A fresh page for each clone source: #/create?clone=A, then #/create, must not keep A's form.
export default function CreateJob({ clone }) {
  return <CreatePage key={clone} clone={clone} />;
}

function CreatePage({ clone }) {
  const visible = useVisibleNamespaces();
  const creatable = useCreatableNamespaces(visible);
  const [form, setForm] = useState(emptyForm);
  const [dirty, setDirty] = useState(false); // no server verdict on a form nobody has touched yet
  const [mode, setMode] = useState('form');
  const [yamlSeed, setYamlSeed] = useState({ text: '', key: 0 }); // what the editor opens with
  const [yamlValue, setYamlValue] = useState(null); // the editor's YAML, parsed (null: does not parse)
  const [notice, setNotice] = useState(null);
  const [loading, setLoading] = useState(Boolean(clone));
  const [loadError, setLoadError] = useState(null);
  const [submitting, setSubmitting] = useState(false);
  const [submitError, setSubmitError] = useState(null);

  // A new job starts in `default` when the user may create there, else in the first namespace they may.
  useEffect(() => {
    if (!creatable || clone) return;
    setForm((f) => (f.namespace ? f : { ...f, namespace: creatable.includes('default') ? 'default' : creatable[0] || '' }));
  }, [creatable, clone]);

  useEffect(() => {
    if (!clone) return undefined;
    let live = true;
    setLoading(true);
    loadClone(clone).then(async (job) => {
      if (!live) return;
      const { form: f, uncovered } = jobToForm(job);
      setForm(f);
      if (uncovered.length) {
        setYamlSeed((s) => ({ text: '', key: s.key + 1 }));
        const text = await toYaml(job);
        if (!live) return;
        setYamlSeed((s) => ({ text, key: s.key + 1 }));
        setYamlValue(job);
        setMode('yaml');
        setNotice({ variant: 'info', title: `${clone} has fields the form does not show, so it opens as YAML`, body: uncovered.join(', ') });
      } else {
        setMode('form');
        setNotice({ variant: 'info', title: `A copy of ${clone}, named ${job.metadata.name}: change what you need and create it`, body: '' });
      }
      setDirty(true);
      setLoading(false);
    }, (err) => live && (setLoadError(err), setLoading(false)));
    return () => { live = false; };
  }, [clone]);

  const choices = useChoices(form.namespace, form.runtime);
  const formJob = useMemo(() => formToJob(form), [form]);
  const job = mode === 'form' ? formJob : yamlValue;
  const namespace = mode === 'form' ? form.namespace
    : ((yamlValue && yamlValue.metadata && yamlValue.metadata.namespace) || form.namespace);
  // none once the job is submitted: a dry run still waiting out its pause would find it made (409)
  const check = useDryRun(job, namespace, dirty && !submitting);
  const shownError = submitError || (check.state !== 'idle' ? check.error : null);

  const set = (patch) => { setForm((f) => ({ ...f, ...patch })); setDirty(true); setSubmitError(null); };
  const onYaml = (text, value) => {
    setYamlValue(value);
    if (text !== yamlSeed.text) { setDirty(true); setSubmitError(null); }
  };

  const toMode = async (next) => {
    if (next === mode) return;
    if (next === 'yaml') {
      const text = await toYaml(formJob);
      setYamlSeed((s) => ({ text, key: s.key + 1 }));
      setYamlValue(formJob);
      setNotice(null);
      setMode('yaml');
      return;
    }
    if (!yamlValue) {
      setNotice({ variant: 'warning', title: 'The YAML does not parse: fix it before going back to the form', body: '' });
      return;
    }
    const { form: f, uncovered } = jobToForm(yamlValue);
    if (uncovered.length) {
      setNotice({ variant: 'warning', title: 'The form cannot show these fields, so the job stays in YAML', body: uncovered.join(', ') });
      return;
    }
    setForm(f);
    setNotice(null);
    setMode('form');
  };

  const submit = async (e) => {
    e.preventDefault();
    if (!job || !namespace) return;
    setSubmitting(true);
    setSubmitError(null);
    try {
      const made = await create(trainjobsPath(namespace), job);
      navigate('jobs', made.metadata.namespace || namespace, made.metadata.name);
    } catch (err) {
      setSubmitError(err);
      setSubmitting(false);
    }
  };

  if (!visible || !creatable || loading) {
    return <PageSection><Bullseye><Spinner aria-label="Loading the form" /></Bullseye></PageSection>;
  }
  if (loadError) {
    return (
      <PageSection>
        <Title headingLevel="h1">Create a training job</Title>
        <Alert component="h2" variant="danger" isInline title={`${clone} could not be loaded`} className="pf-v6-u-mt-md">{loadError.message}</Alert>
      </PageSection>
    );
  }

  const { at, rest } = mode === 'form'
    ? sortCauses(shownError, [...FIELD_PATHS, ...envPaths(form.env)])
    : { at: {}, rest: shownError && !shownError.causes.length ? [shownError.message] : [] };
  const yamlCauses = mode === 'yaml' && shownError ? shownError.causes : [];

  return (
    <PageSection>
      <Title headingLevel="h1">{clone ? `Clone ${clone}` : 'Create a training job'}</Title>
      <p className="pf-v6-u-mt-sm pf-v6-u-mb-md pf-v6-u-text-color-subtle">
        The server checks the job as you type (a dry run: nothing is created until you press Create).
      </p>
      {notice && (
        <Alert component="h2" variant={notice.variant} isInline title={notice.title} className="pf-v6-u-mb-md"
          actionClose={<AlertActionCloseButton onClose={() => setNotice(null)} />}>
          {notice.body}
        </Alert>
      )}
      {creatable.length === 0 && (
        <Alert component="h2" variant="warning" isInline title="You may not create TrainJobs in any namespace" className="pf-v6-u-mb-md">
          Ask an administrator for the edit role in a namespace.
        </Alert>
      )}
      <ToggleGroup aria-label="Edit the job as" className="pf-v6-u-mb-md">
        <ToggleGroupItem text="Form" buttonId="mode-form" isSelected={mode === 'form'} onChange={() => toMode('form')} />
        <ToggleGroupItem text="YAML" buttonId="mode-yaml" isSelected={mode === 'yaml'} onChange={() => toMode('yaml')} />
      </ToggleGroup>
      <Form onSubmit={submit} className="mpijob-create-form" aria-label="Training job">
        {mode === 'form' ? (
          <JobForm form={form} set={set} errors={at} choices={{ ...choices, namespaces: creatable }} />
        ) : (
          <>
            <HelperText>
              <HelperTextItem>
                The TrainJob as it will be submitted, checked against the server&apos;s TrainJob schema and by a dry run.
                Its namespace is metadata.namespace{form.namespace ? `, else ${form.namespace}` : ''}.
              </HelperTextItem>
            </HelperText>
            <DocLinks links={LINKS.yaml} />
            <Suspense fallback={<Spinner size="lg" aria-label="Loading the editor" />}>
              <YamlEditor key={yamlSeed.key} initialText={yamlSeed.text} onChange={onYaml} serverCauses={yamlCauses} />
            </Suspense>
          </>
        )}
        {rest.length > 0 && (
          <Alert component="h2" variant="danger" isInline title={submitError ? 'The job was not created' : 'The server would refuse this job'}
            data-testid="create-errors">
            <ul className="mpijob-error-list">{rest.map((m) => <li key={m}>{m}</li>)}</ul>
          </Alert>
        )}
        <ActionGroup>
          <Button type="submit" variant="primary" isLoading={submitting}
            isDisabled={submitting || !job || !namespace || creatable.length === 0}>Create</Button>
          <Button variant="link" component="a" href="#/jobs">Cancel</Button>
          <CheckState check={check} hasJob={Boolean(job)} />
        </ActionGroup>
      </Form>
    </PageSection>
  );
}

/** What the last dry run said, in a few words next to the buttons (a live region for screen readers). */
function CheckState({ check, hasJob }) {
  let item = null;
  if (!hasJob) item = <HelperTextItem variant="warning">The YAML does not parse</HelperTextItem>;
  else if (check.state === 'checking') item = <HelperTextItem>Checking with the server…</HelperTextItem>;
  else if (check.state === 'ok') item = <HelperTextItem variant="success">The server accepts this job</HelperTextItem>;
  else if (check.state === 'error') item = <HelperTextItem variant="error">The server would refuse this job</HelperTextItem>;
  return <HelperText isLiveRegion data-testid="dry-run-state" className="mpijob-check-state">{item}</HelperText>;
}
