import { PageSection, Title } from '@patternfly/react-core';

export default function Queues() {
  return <PageSection><Title headingLevel="h1">Queues</Title></PageSection>;
}
