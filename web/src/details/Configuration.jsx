// The TrainJob and its runtime as YAML, read-only, each with a copy button. A PatternFly CodeBlock
// rather than an editor: nothing here is edited ("Clone and edit" is the way to change a job).
import { useState } from 'react';
import { ClipboardCopyButton, CodeBlock, CodeBlockCode, Title } from '@patternfly/react-core';
import { stringify } from 'yaml';

/** The object as `kubectl get -o yaml` shows it, without managedFields (noise to a reader). */
export function toYaml(obj) {
  if (!obj) return '';
  const { managedFields, ...metadata } = obj.metadata || {};
  return stringify({ ...obj, metadata }, { lineWidth: 0, sortMapEntries: true }); // sorted, as kubectl prints
}

function YamlBlock({ id, title, text }) {
  const [copied, setCopied] = useState(false);
  const copy = () => {
    navigator.clipboard.writeText(text).then(() => setCopied(true), () => setCopied(false));
  };
  const actions = (
    <ClipboardCopyButton id={`${id}-copy`} textId={`${id}-code`} aria-label={`Copy the ${title} YAML`}
      onClick={copy} exitDelay={copied ? 1500 : 600} variant="plain" onTooltipHidden={() => setCopied(false)}
      data-testid={`${id}-copy`}>
      {copied ? 'Copied' : 'Copy to clipboard'}
    </ClipboardCopyButton>
  );
  return (
    <section className="pf-v6-u-mb-lg" aria-labelledby={`${id}-title`}>
      <Title headingLevel="h2" size="lg" id={`${id}-title`} className="pf-v6-u-mb-sm">{title}</Title>
      <CodeBlock actions={actions} data-testid={`${id}-yaml`}>
        {/* focusable: a scrolling region must be reachable by keyboard */}
        <CodeBlockCode id={`${id}-code`} className="mpijob-details__yaml" tabIndex={0} aria-label={`${title} YAML`}>
          {text || 'Not readable: it does not exist, or you may not read it.'}
        </CodeBlockCode>
      </CodeBlock>
    </section>
  );
}

export default function Configuration({ job, runtime }) {
  const ref = job.spec.runtimeRef || {};
  return (
    <>
      <YamlBlock id="trainjob" title={`TrainJob ${job.metadata.name}`} text={toYaml(job)} />
      <YamlBlock id="runtime" title={`${ref.kind || 'ClusterTrainingRuntime'} ${ref.name || ''}`} text={toYaml(runtime)} />
    </>
  );
}
