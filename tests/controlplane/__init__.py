"""A real Kubernetes v1.35 test cluster on 127.0.0.1 for the e2e tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok (fake nodes where pods run)."""
