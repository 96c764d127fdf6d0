"""The machine's Node as its kubelet registers it: GPU feature discovery's labels when it has GPUs, and
what an administrator adds (labels, taints, a cordon) kept when the kubelet registers again."""

from __future__ import annotations

from pathlib import Path

from mpijob.api import names
from mpijob.api.core.resources import NODES
from mpijob.controllers.kubelet import node
from mpijob.store.objects import Store

CAPACITY = {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "0"}


def test_gpu_labels_follow_gpu_feature_discovery() -> None:
    assert node.gpu_labels(CAPACITY, models=[]) == {}
    declared = node.gpu_labels({**CAPACITY, "nvidia.com/gpu": "8"}, models=[])
    assert declared == {names.LABEL_GPU_COUNT: "8"}  # declared GPUs: their count, no model to name
    found = node.gpu_labels({**CAPACITY, "nvidia.com/gpu": "2"}, models=[("NVIDIA A100-SXM4-80GB", 81920)] * 2)
    assert found == {names.LABEL_GPU_COUNT: "2", names.LABEL_GPU_PRODUCT: "NVIDIA-A100-SXM4-80GB",
                     names.LABEL_GPU_MEMORY: "81920"}


def test_an_admins_labels_taints_and_cordon_survive_a_new_registration(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects.db")
    first = node.register(store, "box", CAPACITY)
    assert first["metadata"]["labels"][names.LABEL_HOSTNAME] == "box"
    assert names.LABEL_GPU_COUNT not in first["metadata"]["labels"]
    first["metadata"]["labels"]["disk"] = "ssd"
    first["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}], "unschedulable": True}
    store.update(NODES, first)
    again = node.register(store, "box", {**CAPACITY, "nvidia.com/gpu": "4"})  # restarted, with GPUs declared
    assert again["metadata"]["labels"]["disk"] == "ssd"
    assert again["metadata"]["labels"][names.LABEL_GPU_COUNT] == "4"
    assert again["spec"]["taints"] == first["spec"]["taints"] and again["spec"]["unschedulable"] is True
    assert again["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    store.close()
