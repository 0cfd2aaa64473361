package authztest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"

	"orch.io/orch/components/certs/certstest"
)

// Path is where the server takes reviews; the kubeconfig names it, as a webhook's kubeconfig does.
const Path = "/authorize"

// ClientName is the common name of the client certificate the kubeconfig presents.
const ClientName = "orch-apiserver"

// Review is one SubjectAccessReview the server received.
type Review struct {
	// APIVersion is the review's apiVersion, such as authorization.k8s.io/v1beta1.
	APIVersion string
	// Spec is the review's spec, converted to v1 when it came as v1beta1.
	Spec authorizationv1.SubjectAccessReviewSpec
	// Raw is the review as JSON objects, to check field names.
	Raw map[string]any
	// Client is the common name of the certificate the caller presented.
	Client string
}

// Answer writes the server's answer to one review. r's context ends when the caller gives up.
type Answer func(w http.ResponseWriter, r *http.Request, review Review)

// Decide answers well-formed reviews, of the apiVersion asked, with the status decide returns.
func Decide(decide func(Review) authorizationv1.SubjectAccessReviewStatus) Answer {
	return func(w http.ResponseWriter, _ *http.Request, review Review) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": review.APIVersion,
			"kind":       "SubjectAccessReview",
			"status":     decide(review),
		})
	}
}

// Status answers every review with status.
func Status(status authorizationv1.SubjectAccessReviewStatus) Answer {
	return Decide(func(Review) authorizationv1.SubjectAccessReviewStatus { return status })
}

// Server is a SubjectAccessReview webhook on 127.0.0.1.
type Server struct {
	// Kubeconfig is a kubeconfig file reaching the server: its CA, Path, and a client certificate,
	// all by paths relative to the file.
	Kubeconfig string
	// URL is the server's address with Path.
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	answer  Answer
	reviews []Review
}

// NewServer starts a webhook answering with answer until the test ends.
func NewServer(t testing.TB, answer Answer) *Server {
	t.Helper()
	dir := t.TempDir()
	ca := certstest.NewCA(t, "webhook-ca")
	pair := ca.Server(t, "webhook")
	serving, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(ca.Cert)
	s := &Server{answer: answer}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + Path

	certstest.WriteFile(t, filepath.Join(dir, "ca.crt"), ca.PEM)
	ca.Client(t, ClientName).WriteFiles(t, dir, "client")
	s.Kubeconfig = filepath.Join(dir, "webhook.kubeconfig")
	certstest.WriteFile(t, s.Kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: policy
  cluster:
    server: %s
    certificate-authority: ca.crt
users:
- name: apiserver
  user:
    client-certificate: client.crt
    client-key: client.key
contexts:
- name: webhook
  context: {cluster: policy, user: apiserver}
current-context: webhook
`, s.URL)))
	return s
}

// SetAnswer changes how later reviews are answered.
func (s *Server) SetAnswer(a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = a
}

// Reviews returns the reviews received so far.
func (s *Server) Reviews() []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Review(nil), s.reviews...)
}

// Calls is the number of reviews received so far.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reviews)
}

// Close stops the server, so later calls find nobody listening.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != Path {
		http.Error(w, "reviews are posted to "+Path, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review, err := decode(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review.Client = r.TLS.PeerCertificates[0].Subject.CommonName
	s.mu.Lock()
	s.reviews = append(s.reviews, review)
	answer := s.answer
	s.mu.Unlock()
	answer(w, r, review)
}

func decode(body []byte) (Review, error) {
	var review Review
	if err := json.Unmarshal(body, &review.Raw); err != nil {
		return review, err
	}
	review.APIVersion, _ = review.Raw["apiVersion"].(string)
	if kind := review.Raw["kind"]; kind != "SubjectAccessReview" {
		return review, fmt.Errorf("kind %v, want SubjectAccessReview", kind)
	}
	switch review.APIVersion {
	case authorizationv1.SchemeGroupVersion.String():
		var v1 authorizationv1.SubjectAccessReview
		err := json.Unmarshal(body, &v1)
		review.Spec = v1.Spec
		return review, err
	case authorizationv1beta1.SchemeGroupVersion.String():
		var v1beta1 authorizationv1beta1.SubjectAccessReview
		if err := json.Unmarshal(body, &v1beta1); err != nil {
			return review, err
		}
		in := v1beta1.Spec
		review.Spec = authorizationv1.SubjectAccessReviewSpec{User: in.User, Groups: in.Groups, UID: in.UID}
		if in.Extra != nil {
			review.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			for k, v := range in.Extra {
				review.Spec.Extra[k] = authorizationv1.ExtraValue(v)
			}
		}
		if a := in.ResourceAttributes; a != nil {
			review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb,
				Group: a.Group, Version: a.Version, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
		}
		if a := in.NonResourceAttributes; a != nil {
			review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
		}
		return review, nil
	}
	return review, fmt.Errorf("apiVersion %q, want authorization.k8s.io/v1 or v1beta1", review.APIVersion)
}
