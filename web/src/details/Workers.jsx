// The launcher and node pods: where each runs, which MPI ranks it holds and how it ended.
import { Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import {
  container, hostOf, parseHostfile, podResources, podStatus, procsPerNode, rankRanges, roleOf, sortPods,
} from './model.js';

const STATUS_COLORS = { Running: 'teal', Completed: 'green', Error: 'red', OOMKilled: 'red', Terminating: 'orange' };

const rangeText = (r) => (!r ? '—' : r.first === r.last ? `${r.first}` : `${r.first}–${r.last}`);

export default function Workers({ job, pods, runtime, hostfile }) {
  const mpi = runtime && runtime.spec.mlPolicy && runtime.spec.mlPolicy.mpi;
  const launcherRuns = Boolean(mpi && mpi.runLauncherAsNode);
  const hosts = parseHostfile(hostfile);
  const ranks = rankRanges(pods, hosts, procsPerNode(job, runtime), launcherRuns);
  const sorted = sortPods(pods);
  return (
    <>
      <p className="pf-v6-u-mb-sm pf-v6-u-color-200" data-testid="ranks-source">
        {hosts.length
          ? `MPI ranks as mpirun places them from the hostfile ConfigMap ${job.metadata.name}-mpi-hostfile (by slot, its own host first).`
          : 'MPI ranks from numProcPerNode (the hostfile is not readable).'}
      </p>
      <Table aria-label="Worker pods" variant="compact" data-testid="workers-table">
        <Thead>
          <Tr>
            <Th modifier="wrap">Pod</Th><Th modifier="wrap">Role</Th><Th modifier="wrap">State</Th><Th modifier="wrap">MPI ranks</Th><Th modifier="wrap">Host name</Th>
            <Th modifier="wrap">Exit code</Th><Th modifier="wrap">Reason</Th><Th modifier="wrap">GPUs</Th><Th modifier="wrap">CPUs</Th><Th modifier="wrap">Memory</Th>
          </Tr>
        </Thead>
        <Tbody>
          {sorted.length === 0 && (
            <Tr><Td colSpan={10}>No pods yet: they are created when the job is admitted.</Td></Tr>
          )}
          {sorted.map((pod) => {
            const c = container(pod);
            const t = c && c.state && c.state.terminated;
            const status = podStatus(pod);
            const res = podResources(pod);
            return (
              <Tr key={pod.metadata.uid} data-testid={`worker-${pod.metadata.name}`}>
                <Td dataLabel="Pod">{pod.metadata.name}</Td>
                <Td dataLabel="Role">{roleOf(pod)}</Td>
                <Td dataLabel="State"><Label color={STATUS_COLORS[status] || 'grey'}>{status}</Label></Td>
                <Td dataLabel="MPI ranks">{rangeText(ranks.get(pod.metadata.name))}</Td>
                <Td dataLabel="Host name">{hostOf(pod) || '—'}</Td>
                <Td dataLabel="Exit code">{t ? t.exitCode : '—'}</Td>
                <Td dataLabel="Reason">{(t && (t.reason || t.message)) || (c && c.state && c.state.waiting && c.state.waiting.reason) || '—'}</Td>
                <Td dataLabel="GPUs">{res.gpus || '0'}</Td>
                <Td dataLabel="CPUs">{res.cpu || 'unlimited'}</Td>
                <Td dataLabel="Memory">{res.memory || 'unlimited'}</Td>
              </Tr>
            );
          })}
        </Tbody>
      </Table>
    </>
  );
}
