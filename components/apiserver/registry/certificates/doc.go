// Package certificates holds certificates.orch.io/v1 certificatesigningrequests, through which
// nodes obtain and renew their client and serving certificates: their strategies and the REST of
// their approval subresource.
package certificates
