// Package certificates holds the strategies of certificates.orch.io/v1 certificatesigningrequests,
// through which nodes obtain and renew their client and serving certificates.
package certificates
