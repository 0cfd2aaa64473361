// Package authztest runs a real SubjectAccessReview webhook for tests: HTTPS with a test CA, client
// certificates required, and a kubeconfig file that reaches it.
package authztest
