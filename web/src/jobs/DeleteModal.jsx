// Asks before a job is deleted: its pods stop and its logs go with it.
import { Button, Modal, ModalBody, ModalFooter, ModalHeader } from '@patternfly/react-core';

export default function DeleteModal({ row, onConfirm, onCancel }) {
  if (!row) return null;
  return (
    <Modal isOpen variant="small" onClose={onCancel} aria-labelledby="delete-job-title" aria-describedby="delete-job-body">
      <ModalHeader title={`Delete ${row.name}?`} titleIconVariant="warning" labelId="delete-job-title" />
      <ModalBody id="delete-job-body">
        The TrainJob <strong>{row.name}</strong> in namespace <strong>{row.namespace}</strong> is deleted with its
        pods and their logs. A running job stops. Its record stays in the History page.
      </ModalBody>
      <ModalFooter>
        <Button variant="danger" onClick={() => onConfirm(row)}>Delete</Button>
        <Button variant="link" onClick={onCancel}>Cancel</Button>
      </ModalFooter>
    </Modal>
  );
}
