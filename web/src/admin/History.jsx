import { PageSection, Title } from '@patternfly/react-core';

export default function History() {
  return <PageSection><Title headingLevel="h1">History</Title></PageSection>;
}
