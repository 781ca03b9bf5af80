"""What a skip or a failure is about, as fields (cluster, namespace, kind, name, container, pod, GPU):
filters and lookups read the fields; only people read the text."""

from __future__ import annotations

from dataclasses import dataclass, replace

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.untrusted import one_line

POD = "pod"
AUTOSCALER = "hpa"


@dataclass(frozen=True, order=True)
class Subject:
    """A namespace (kind ""), a pod (kind "pod"), an autoscaler (kind "hpa"), a workload (a workload kind)
    or one of its containers (and a pod's GPUs of it: resource "gpu"), or a GPU on a node (node, gpu)."""

    namespace: str = ""
    kind: str = ""
    name: str = ""
    container: str = ""
    pod: str = ""  # the pod of a workload whose container's GPUs the subject is
    resource: str = ""  # "gpu": the container's GPUs
    node: str = ""
    gpu: str = ""  # a GPU's UUID, with "/<MIG instance id>" for a MIG instance
    cluster: str = ""

    @staticmethod
    def of_namespace(namespace: str) -> Subject:
        return Subject(namespace)

    @staticmethod
    def of_pod(namespace: str, pod: str) -> Subject:
        return Subject(namespace, POD, pod)

    @staticmethod
    def of_autoscaler(namespace: str, name: str) -> Subject:
        return Subject(namespace, AUTOSCALER, name)

    @staticmethod
    def of_workload(ref: WorkloadRef, container: str = "", *, pod: str = "", resource: str = "") -> Subject:
        """A workload, or one of its containers (of one pod, and its GPUs: resource "gpu")."""
        return Subject(ref.namespace, ref.kind, ref.name, container, pod, resource, cluster=ref.cluster)

    @staticmethod
    def of_gpu(node: str, uuid: str, mig_instance: str | None = None) -> Subject:
        return Subject(node=node, gpu=f"{uuid}/{mig_instance}" if mig_instance else uuid)

    @property
    def workload(self) -> WorkloadRef | None:
        """The workload the subject is or belongs to; None for a namespace, a pod, an autoscaler, a GPU."""
        if self.kind not in SUPPORTED_KINDS:
            return None
        return WorkloadRef(self.namespace, self.kind, self.name, self.cluster)

    @property
    def is_namespace(self) -> bool:
        return bool(self.namespace) and not self.kind and not self.node

    def in_cluster(self, cluster: str) -> Subject:
        return self if self.cluster == cluster else replace(self, cluster=cluster)

    def fields(self) -> dict[str, str]:
        """The fields that are set, for JSON documents."""
        names = ("cluster", "namespace", "kind", "name", "container", "pod", "resource", "node", "gpu")
        return {n: getattr(self, n) for n in names if getattr(self, n)}

    def __str__(self) -> str:
        """`[cluster:]namespace/shop`, `shop/pod/x`, `shop/hpa/x`, `shop/Deployment/web[/pod/p][/container/c]
        [/gpu]`, `gpu/<node>/<uuid>[/<mig>]`: the text the outputs have always shown, one line (the names
        come from outside: a control character in one is shown escaped, podsizer.untrusted.one_line)."""
        return one_line(self._text())

    def _text(self) -> str:
        where = f"{self.cluster}:" if self.cluster else ""
        if self.node or self.gpu:
            return f"{where}gpu/{self.node}/{self.gpu}"
        if not self.kind:
            return f"{where}namespace/{self.namespace}"
        text = f"{where}{self.namespace}/{self.kind}/{self.name}"
        text += f"/pod/{self.pod}" if self.pod else ""
        text += f"/container/{self.container}" if self.container else ""
        return text + (f"/{self.resource}" if self.resource else "")
