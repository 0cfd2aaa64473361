package conformance

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/conformance/target"
)

// bootstrapSteps run the agent with --bootstrap-kubeconfig against a server of the scenario's own
// that signs certificates, and read the requests, certificates and files that come of it.
func bootstrapSteps() []StepDef {
	return []StepDef{
		{`^the agent bootstraps against the scenario's API server as "([^"]*)" with "([^"]*)"$`, func(w *World) any { return w.agentBootstraps }},
		{`^the scenario's API server has the agent's node$`, func(w *World) any { return w.scenarioHasNode }},
		{`^"([^"]*)" holds a client certificate for "([^"]*)" signed by "([^"]*)"$`, func(w *World) any { return w.holdsClientCert }},
		{`^the --orchconfig file the agent wrote uses "([^"]*)"$`, func(w *World) any { return w.orchconfigUses }},
		{`^the scenario's API server has an approved node client request from "([^"]*)"$`, func(w *World) any { return w.approvedClientRequest }},
		{`^the agent's client certificate is renewed within (\d+) seconds$`, func(w *World) any { return w.clientCertRenewed }},
		{`^the scenario's API server has a pending serving request from "([^"]*)"$`, func(w *World) any { return w.pendingServingRequest }},
		{`^the serving request is approved through the scenario's API server$`, func(w *World) any { return w.approveServingRequest }},
		{`^the HTTPS server presents a certificate for "([^"]*)" signed by "([^"]*)"$`, func(w *World) any { return w.presentsIssuedCert }},
		{`^the HTTPS server presents no certificate$`, func(w *World) any { return w.presentsNoCert }},
	}
}

// csrsPath is where the target serves CertificateSigningRequests.
func (w *World) csrsPath() string {
	return "/apis/" + w.t.Profile.Spell("certificates.orch.io") + "/v1/certificatesigningrequests"
}

// The signers the agent asks, as orch spells them (renamed from Kubernetes' kubelet signers): the
// steps compare with the profile's spelling.
const (
	nodeClientSigner  = "orch.io/orch-apiserver-client-orchlet"
	nodeServingSigner = "orch.io/orchlet-serving"
)

// scenarioDo sends a request to the scenario's API server as the profile's administrator.
func (w *World) scenarioDo(method, path string, body any) (int, []byte, error) {
	if w.server == nil {
		return 0, nil, fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	return w.adminDo(w.server.Client, w.server.BaseURL+path, method, body)
}

// writeKubeconfig writes file in the scenario's directory: one context, cluster, reaching server
// (trusting the CA in caFile) as user with token. It answers the file's path.
func (w *World) writeKubeconfig(file, cluster, user, server, caFile, token string) (string, error) {
	path := filepath.Join(w.dir, file)
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %s, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: %s, context: {cluster: %s, user: %s}}]
current-context: %s
`, cluster, server, caFile, user, token, cluster, cluster, user, cluster)
	return path, os.WriteFile(path, []byte(content), 0o600)
}

// agentBootstraps runs the agent with an --orchconfig file that does not exist and a bootstrap
// kubeconfig carrying user's token for the scenario's API server.
func (w *World) agentBootstraps(user, args string) error {
	if w.server == nil {
		return fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	boot, err := w.writeKubeconfig("bootstrap.conf", "scenario", "bootstrap", w.server.BaseURL, w.server.CAFile, userToken(user))
	if err != nil {
		return err
	}
	return w.agentRuns(args + " --bootstrap-kubeconfig=" + boot + " --orchconfig=" + filepath.Join(w.dir, "orchlet.conf"))
}

func (w *World) scenarioHasNode() error {
	return eventually(target.CommandTimeout, func() error {
		code, data, err := w.scenarioDo(http.MethodGet, "/api/v1/nodes/"+nodeName, nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("node %s: %d %s\nagent:\n%s", nodeName, code, data, w.agentOutput())
		}
		return nil
	})
}

// firstCert reads the first certificate of a PEM file.
func firstCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for b, rest := pem.Decode(data); b != nil; b, rest = pem.Decode(rest) {
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
	return nil, fmt.Errorf("%s holds no certificate", path)
}

// signedBy checks that cert is for cn in system:nodes and signed by the scenario's CA ca.
func (w *World) signedBy(cert *x509.Certificate, cn, ca string) error {
	p, ok := w.certs[ca]
	if !ok {
		return fmt.Errorf("no certificate authority %q", ca)
	}
	if cert.Subject.CommonName != cn || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		return fmt.Errorf("certificate for %v, want CN %s in O system:nodes", cert.Subject, cn)
	}
	return cert.CheckSignatureFrom(p.cert)
}

func (w *World) holdsClientCert(path, cn, ca string) error {
	cert, err := firstCert(w.expandDir(path))
	if err != nil {
		return err
	}
	if err := w.signedBy(cert, cn, ca); err != nil {
		return err
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		return fmt.Errorf("extended key usages %v, want client auth only", cert.ExtKeyUsage)
	}
	return nil
}

func (w *World) orchconfigUses(path string) error {
	data, err := os.ReadFile(filepath.Join(w.dir, "orchlet.conf"))
	if err != nil {
		return err
	}
	path = w.expandDir(path)
	for _, field := range []string{"client-certificate: ", "client-key: "} {
		if !strings.Contains(string(data), field+path) {
			return fmt.Errorf("the written --orchconfig has no %s%s:\n%s", field, path, data)
		}
	}
	return nil
}

func (w *World) scenarioCSRs() ([]certificatesv1.CertificateSigningRequest, error) {
	code, data, err := w.scenarioDo(http.MethodGet, w.csrsPath(), nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("listing certificate signing requests: %d %s", code, data)
	}
	list := &certificatesv1.CertificateSigningRequestList{}
	return list.Items, json.Unmarshal(data, list)
}

func approved(csr certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (w *World) approvedClientRequest(user string) error {
	return eventually(target.CommandTimeout, func() error {
		csrs, err := w.scenarioCSRs()
		if err != nil {
			return err
		}
		for _, csr := range csrs {
			if csr.Spec.SignerName == w.t.Profile.Spell(nodeClientSigner) && csr.Spec.Username == user && approved(csr) && len(csr.Status.Certificate) > 0 {
				return nil
			}
		}
		return fmt.Errorf("no approved and issued node client request from %q among %d", user, len(csrs))
	})
}

// clientCertRenewed waits for the agent's current client certificate file (orchlet-client-current.pem
// for orch) to hold another certificate than now, obtained by the node itself.
func (w *World) clientCertRenewed(seconds int) error {
	current := filepath.Join(w.dir, "pki", w.t.Profile.Spell("orchlet-client-current.pem"))
	// The first certificate may still be on its way: an agent can say it runs before its bootstrap
	// request is signed (the kubelet does).
	var first *x509.Certificate
	if err := eventually(target.CommandTimeout, func() (err error) {
		first, err = firstCert(current)
		return err
	}); err != nil {
		return err
	}
	if err := eventually(time.Duration(seconds)*time.Second, func() error {
		next, err := firstCert(current)
		if err != nil {
			return err
		}
		if next.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("%s still holds the certificate expiring %v", current, first.NotAfter)
		}
		return nil
	}); err != nil {
		return err
	}
	return w.approvedClientRequest("system:node:" + nodeName)
}

func (w *World) servingRequest(user string) (*certificatesv1.CertificateSigningRequest, error) {
	csrs, err := w.scenarioCSRs()
	if err != nil {
		return nil, err
	}
	for i, csr := range csrs {
		if csr.Spec.SignerName == w.t.Profile.Spell(nodeServingSigner) && csr.Spec.Username == user {
			return &csrs[i], nil
		}
	}
	return nil, fmt.Errorf("no serving request from %q among %d", user, len(csrs))
}

func (w *World) pendingServingRequest(user string) error {
	return eventually(target.CommandTimeout, func() error {
		csr, err := w.servingRequest(user)
		if err != nil {
			return err
		}
		if len(csr.Status.Conditions) > 0 || len(csr.Status.Certificate) > 0 {
			return errStop{fmt.Errorf("the serving request %s is not pending: %+v", csr.Name, csr.Status.Conditions)}
		}
		return nil
	})
}

func (w *World) approveServingRequest() error {
	csr, err := w.servingRequest("system:node:" + nodeName)
	if err != nil {
		return err
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Conformance", Message: "approved by the scenario",
	})
	code, data, err := w.scenarioDo(http.MethodPut, w.csrsPath()+"/"+csr.Name+"/approval", csr)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("approving %s: %d %s", csr.Name, code, data)
	}
	return nil
}

func (w *World) presentsIssuedCert(cn, ca string) error {
	return eventually(target.CommandTimeout, func() error {
		cert, err := w.presented()
		if err != nil {
			return err
		}
		if err := w.signedBy(cert, cn, ca); err != nil {
			return err
		}
		if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
			return fmt.Errorf("extended key usages %v, want server auth only", cert.ExtKeyUsage)
		}
		return nil
	})
}

// presentsNoCert checks that a TLS handshake with the HTTPS server fails: it has no certificate.
func (w *World) presentsNoCert() error {
	if cert, err := w.presented(); err == nil {
		return fmt.Errorf("the HTTPS server presents %q", cert.Subject.CommonName)
	}
	return nil
}
