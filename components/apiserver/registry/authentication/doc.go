// Package authentication holds authentication.orch.io/v1 tokenreviews (the server's authenticator
// asked over the API) and selfsubjectreviews (who the server takes the requesting user for).
package authentication
