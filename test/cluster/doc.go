// Package cluster holds the end-to-end suites (build tag cluster, run by
// `make test-all` and on their own by `make e2e-cluster`) that run on the local cluster of internal/localcluster:
// kube-scheduler, kube-controller-manager, KWOK and Karpenter against
// envtest's control plane.
package cluster
