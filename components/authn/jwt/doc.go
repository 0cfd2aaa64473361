// Package jwt authenticates bearer tokens issued by OpenID Connect providers, as the JWT
// authenticators of an AuthenticationConfiguration describe them and as Kubernetes' structured
// authentication verifies them.
package jwt
