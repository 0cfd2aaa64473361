// Package serviceaccount issues and authenticates service account tokens: JWTs bound to a
// service account (and a pod), signed and checked as Kubernetes' pkg/serviceaccount does.
package serviceaccount
