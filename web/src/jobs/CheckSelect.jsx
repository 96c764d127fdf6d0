// A multiple-choice filter: a menu of checkboxes behind a toggle that names the category and counts
// what is checked.
import { Badge, MenuToggle, Select, SelectList, SelectOption } from '@patternfly/react-core';
import { useState } from 'react';

export const NONE = '(none)'; // how an empty value (no queue, no creator) reads in a menu and a chip

export default function CheckSelect({ label, values, selected, onChange }) {
  const [open, setOpen] = useState(false);
  const toggle = (ref) => (
    <MenuToggle ref={ref} onClick={() => setOpen(!open)} isExpanded={open} aria-label={`Filter by ${label.toLowerCase()}`}
      badge={selected.length ? <Badge isRead>{selected.length}</Badge> : undefined}>
      {label}
    </MenuToggle>
  );
  return (
    <Select role="menu" isOpen={open} onOpenChange={setOpen} toggle={toggle} selected={selected}
      onSelect={(_e, value) => onChange(selected.includes(value) ? selected.filter((v) => v !== value) : [...selected, value])}>
      <SelectList aria-label={label}>
        {values.length === 0 && <SelectOption isDisabled value="">No values</SelectOption>}
        {values.map((v) => (
          <SelectOption key={v || NONE} hasCheckbox value={v} isSelected={selected.includes(v)}>{v || NONE}</SelectOption>
        ))}
      </SelectList>
    </Select>
  );
}
