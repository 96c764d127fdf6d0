// Environment variables as rows of name and value; a row's server errors show under it.
import { Button, Flex, FlexItem, FormGroup, TextInput } from '@patternfly/react-core';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon.js';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon.js';
import { Help, FieldErrors } from './Field.jsx';
import { envIndexes } from './formModel.js';
import { LINKS } from './links.js';

export default function EnvRows({ rows, onChange, errors }) {
  const indexes = envIndexes(rows);
  const set = (i, patch) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <FormGroup label="Environment variables" role="group" fieldId="job-env-add"
      labelHelp={(
        <Help label="Environment variables" links={LINKS.env}>
          Set for the program on every node (<code>spec.trainer.env</code>). Names are letters, digits and _,
          not starting with a digit. A variable the runtime also sets takes the value given here.
        </Help>
      )}>
      {rows.map((row, i) => {
        const path = `spec.trainer.env[${indexes[i]}]`;
        const nameErrors = indexes[i] >= 0 && errors[`${path}.name`];
        const valueErrors = indexes[i] >= 0 && errors[`${path}.value`];
        const rowErrors = indexes[i] >= 0 && errors[path];
        return (
          <div key={i} className="mpijob-env-row">
            <Flex spaceItems={{ default: 'spaceItemsSm' }} flexWrap={{ default: 'nowrap' }}>
              <FlexItem flex={{ default: 'flex_1' }}>
                <TextInput aria-label={`Name of variable ${i + 1}`} id={`job-env-${i}-name`} placeholder="NAME"
                  value={row.name} validated={nameErrors ? 'error' : 'default'} onChange={(_e, name) => set(i, { name })} />
              </FlexItem>
              <FlexItem flex={{ default: 'flex_2' }}>
                <TextInput aria-label={`Value of variable ${i + 1}`} id={`job-env-${i}-value`} placeholder="value"
                  value={row.value} validated={valueErrors ? 'error' : 'default'} onChange={(_e, value) => set(i, { value })} />
              </FlexItem>
              <FlexItem>
                <Button variant="plain" aria-label={`Remove variable ${i + 1}`} icon={<MinusCircleIcon />}
                  onClick={() => onChange(rows.filter((_r, j) => j !== i))} />
              </FlexItem>
            </Flex>
            <FieldErrors causes={[...(nameErrors || []), ...(valueErrors || []), ...(rowErrors || [])]} />
          </div>
        );
      })}
      <Button id="job-env-add" variant="link" isInline icon={<PlusCircleIcon />}
        onClick={() => onChange([...rows, { name: '', value: '' }])}>
        Add variable
      </Button>
    </FormGroup>
  );
}
