// Package serviceaccount is the server's service account controller together with its root CA
// publisher, as Kubernetes' serviceaccounts controller and root CA publisher: every active
// namespace gets its default service account and its orch-root-ca.crt configmap. They share one
// sweep, the configmap first, so that a pod that finds its namespace's default service account
// finds the root CA its token volume projects too.
package serviceaccount
