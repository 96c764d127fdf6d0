import { PageSection, Title } from '@patternfly/react-core';

export default function CreateJob() {
  return <PageSection><Title headingLevel="h1">CreateJob</Title></PageSection>;
}
