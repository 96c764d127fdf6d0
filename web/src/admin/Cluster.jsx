import { PageSection, Title } from '@patternfly/react-core';

export default function Cluster() {
  return <PageSection><Title headingLevel="h1">Cluster</Title></PageSection>;
}
