"""The real node: containerd, runc, CNI and a kubelet registered with the test apiserver beside kwok's."""
