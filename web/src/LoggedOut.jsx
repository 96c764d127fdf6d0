import { Bullseye, EmptyState, EmptyStateBody, EmptyStateFooter, ClipboardCopy } from '@patternfly/react-core';

/** No session: how to get one (a login link is made by the CLI, for the kubeconfig's user). */
export function LoggedOut({ problem }) {
  return (
    <Bullseye>
      <EmptyState titleText="Log in to mpijob" headingLevel="h1">
        <EmptyStateBody>
          {problem ? <p role="alert">{problem}</p> : null}
          <p>Open the dashboard with a one-time login link for the user of your kubeconfig:</p>
        </EmptyStateBody>
        <EmptyStateFooter>
          <ClipboardCopy isReadOnly hoverTip="Copy" clickTip="Copied" aria-label="Command that opens the dashboard">mpijob dashboard</ClipboardCopy>
        </EmptyStateFooter>
      </EmptyState>
    </Bullseye>
  );
}
