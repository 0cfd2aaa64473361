// Package authn authenticates HTTP requests for the API server and the node agent: who is asking.
//
// An Authenticator looks at one request and answers one of three things:
//
//   - (user, true, nil): the request carries a credential of its kind and the credential is valid;
//   - (nil, false, nil): no opinion, the request carries no credential of its kind;
//   - (nil, false, err): the request carries a credential of its kind and it is invalid.
//
// The implementations follow Kubernetes: a static token file (--token-auth-file), client
// certificates (X509), bearer tokens checked by a TokenReview webhook, anonymous access
// (--anonymous-auth, or limited to paths) and a Union that tries authenticators in order. As in Kubernetes, anonymous
// access applies only to requests that no other authenticator rejected: a request presenting a
// bearer token nobody accepts gets an error (401), never system:anonymous.
//
// The authenticated user travels to handlers in the request context (WithUser, UserFrom).
package authn
