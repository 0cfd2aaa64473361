// Package serviceaccount is Kubernetes' ServiceAccount admission plugin: a new pod runs as a
// service account that exists (its namespace's default one when it names none) and gets the
// projected volume of its token, unless it opts out.
package serviceaccount
