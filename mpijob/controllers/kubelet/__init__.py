"""The kubelet's part: pods as sandboxed processes, their addresses, cgroups, capacity and leftovers."""
