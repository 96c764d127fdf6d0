// One form field: its label, a help popover with documentation links, the server's errors for its
// field path (or a hint when there are none).
import {
  FormGroup, FormGroupLabelHelp, FormHelperText, HelperText, HelperTextItem, Popover,
} from '@patternfly/react-core';
import ExternalLinkAltIcon from '@patternfly/react-icons/dist/esm/icons/external-link-alt-icon.js';

/** Links for the help popovers: [text, url]. */
export function DocLinks({ links }) {
  return (
    <ul className="mpijob-help-links">
      {links.map(([text, url]) => (
        <li key={url}><a href={url} target="_blank" rel="noopener noreferrer">{text} <ExternalLinkAltIcon /></a></li>
      ))}
    </ul>
  );
}

export function Help({ label, children, links }) {
  return (
    // The title in the body: PatternFly renders headerContent as a <header> landmark with an h6.
    <Popover aria-label={label} bodyContent={<><strong>{label}</strong><div>{children}</div></>}
      footerContent={links && <DocLinks links={links} />}>
      <FormGroupLabelHelp aria-label={`More about ${label.toLowerCase()}`} />
    </Popover>
  );
}

/**
 * The server's errors for a field (`causes`: [{field, message}]), one group per field path the server
 * named, marked `data-testid="error-<that path>"` (error-spec.trainer.numNodes) for tests.
 */
export function FieldErrors({ causes }) {
  if (!causes || !causes.length) return null;
  const fields = [...new Set(causes.map((c) => c.field))];
  return (
    <FormHelperText>
      {fields.map((field) => (
        <HelperText key={field} data-testid={`error-${field}`}>
          {causes.filter((c) => c.field === field).map((c) => (
            <HelperTextItem key={c.message} variant="error">{c.message}</HelperTextItem>
          ))}
        </HelperText>
      ))}
    </FormHelperText>
  );
}

/**
 * `children(validated)`: the input, told whether it is in error. `path` is the TrainJob field the
 * input writes, whose server errors show here.
 */
export default function Field({ id, label, path, errors, hint, help, links, isRequired, children }) {
  const causes = errors[path];
  return (
    <FormGroup label={label} fieldId={id} isRequired={isRequired}
      labelHelp={help ? <Help label={label} links={links}>{help}</Help> : undefined}>
      {children(causes ? 'error' : 'default')}
      {causes ? <FieldErrors causes={causes} /> : hint && (
        <FormHelperText><HelperText><HelperTextItem>{hint}</HelperTextItem></HelperText></FormHelperText>
      )}
    </FormGroup>
  );
}
