// Package authentication holds authentication.orch.io/v1 tokenreviews: the server's authenticator
// asked over the API.
package authentication
