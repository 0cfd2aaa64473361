// Package certificates holds Kubernetes' admission plugins of certificate signing requests:
// CertificateApproval (only a user who may approve for a request's signer approves it),
// CertificateSigning (only one who may sign for it sets its certificate) and
// CertificateSubjectRestriction (nobody asks the API server client signer for system:masters).
// The server's own controllers, which write without a request's user, are not judged.
package certificates
