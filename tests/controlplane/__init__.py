"""A real kube-apiserver, kube-controller-manager and etcd on 127.0.0.1 for the e2e tests."""
