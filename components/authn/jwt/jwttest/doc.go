// Package jwttest runs an OpenID Connect provider over HTTPS for tests: discovery, a JSON Web Key
// Set, keys made per test and tokens signed with them.
package jwttest
