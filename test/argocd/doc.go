// Package argocd tests the Argo CD health checks laxity ships in
// config/argocd: each kind's health.lua is run, as Argo CD runs it, on every
// stored object its health_test.yaml lists, and must give the health status
// and message listed there. The layout (a directory per group and kind with
// health.lua, health_test.yaml and testdata/) is Argo CD's own, so the checks
// can be contributed to its resource customizations as they are.
package argocd
