// Package authorization holds authorization.orch.io/v1 subjectaccessreviews (the server's
// authorizer asked over the API about any user), localsubjectaccessreviews (the same, confined to
// one namespace), selfsubjectaccessreviews (about the requesting user) and selfsubjectrulesreviews
// (what the requesting user may do in a namespace).
package authorization
