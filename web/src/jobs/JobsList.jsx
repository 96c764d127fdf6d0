import { PageSection, Title } from '@patternfly/react-core';

export default function JobsList() {
  return <PageSection><Title headingLevel="h1">JobsList</Title></PageSection>;
}
