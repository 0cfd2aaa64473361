// Package authorization holds authorization.orch.io/v1 subjectaccessreviews: the server's
// authorizer asked over the API.
package authorization
