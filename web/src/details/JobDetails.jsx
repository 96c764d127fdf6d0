import { PageSection, Title } from '@patternfly/react-core';

export default function JobDetails() {
  return <PageSection><Title headingLevel="h1">JobDetails</Title></PageSection>;
}
