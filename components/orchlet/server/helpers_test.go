package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
)

const nodeName = "node-1"

type fakePods []corev1.Pod

func (p fakePods) Pods() []corev1.Pod { return p }

type fakeStats struct{ summary Summary }

func (f fakeStats) Summary(context.Context) (*Summary, error) {
	s := f.summary
	return &s, nil
}

// fakeLogs serves one container, default/web/nginx, and records the options it was asked with.
type fakeLogs struct {
	mu   sync.Mutex
	opts *corev1.PodLogOptions
}

func (f *fakeLogs) ContainerLogs(_ context.Context, namespace, pod, container string, opts *corev1.PodLogOptions, out io.Writer) error {
	if namespace != "default" || pod != "web" || container != "nginx" {
		return wrapNotFound(namespace, pod, container)
	}
	f.mu.Lock()
	f.opts = opts
	f.mu.Unlock()
	_, err := io.WriteString(out, "line 1\nline 2\n")
	return err
}

// fakeStreams serves one container, default/web/nginx (pod UID uid-web), answering the URL of
// backend with the call and its arguments in the query, so a test sees what was asked.
type fakeStreams struct {
	backend string
}

func (f *fakeStreams) url(call string, args url.Values) (*url.URL, error) {
	u, err := url.Parse(f.backend + "/" + call)
	if err != nil {
		return nil, err
	}
	u.RawQuery = args.Encode()
	return u, nil
}

func found(namespace, pod, uid, container string) error {
	if namespace != "default" || pod != "web" || (uid != "" && uid != "uid-web") || container != "nginx" {
		return wrapNotFound(namespace, pod, container)
	}
	return nil
}

func (f *fakeStreams) GetExec(_ context.Context, namespace, pod, uid, container string, cmd []string, o StreamOptions) (*url.URL, error) {
	if err := found(namespace, pod, uid, container); err != nil {
		return nil, err
	}
	return f.url("exec", url.Values{"cmd": cmd, "opts": {fmt.Sprintf("%+v", o)}})
}

func (f *fakeStreams) GetAttach(_ context.Context, namespace, pod, uid, container string, o StreamOptions) (*url.URL, error) {
	if err := found(namespace, pod, uid, container); err != nil {
		return nil, err
	}
	return f.url("attach", url.Values{"opts": {fmt.Sprintf("%+v", o)}})
}

func (f *fakeStreams) GetPortForward(_ context.Context, namespace, pod, uid string, ports []int32) (*url.URL, error) {
	if err := found(namespace, pod, uid, "nginx"); err != nil {
		return nil, err
	}
	if len(ports) == 1 && ports[0] == 9 {
		return nil, status.Error(codes.ResourceExhausted, "maximum number of in-flight requests exceeded")
	}
	return f.url("portforward", url.Values{"ports": {fmt.Sprint(ports)}})
}

func (f *fakeStreams) RunInContainer(_ context.Context, namespace, pod, uid, container string, cmd []string) ([]byte, error) {
	if err := found(namespace, pod, uid, container); err != nil {
		return nil, err
	}
	return []byte("ran " + strings.Join(cmd, "|")), nil
}

func wrapNotFound(namespace, pod, container string) error {
	return &notFound{what: namespace + "/" + pod + "/" + container}
}

type notFound struct{ what string }

func (e *notFound) Error() string { return "container " + e.what + " not found" }
func (e *notFound) Unwrap() error { return ErrNotFound }

var startTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func testPods() fakePods {
	return fakePods{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node-1", Namespace: "kube-system", UID: "uid-etcd"}},
	}
}

func u64(v uint64) *uint64 { return &v }

func testSummary() Summary {
	return Summary{
		Node: NodeStats{
			NodeName: nodeName, StartTime: startTime,
			CPU:    &CPUStats{Time: startTime, UsageNanoCores: u64(250_000_000), UsageCoreNanoSeconds: u64(9_000)},
			Memory: &MemoryStats{Time: startTime, UsageBytes: u64(1 << 30), WorkingSetBytes: u64(1 << 29)},
		},
		Pods: []PodStats{{
			PodRef:     PodReference{Name: "web", Namespace: "default", UID: "uid-web"},
			StartTime:  startTime,
			Containers: []ContainerStats{{Name: "nginx", StartTime: startTime, CPU: &CPUStats{Time: startTime, UsageNanoCores: u64(1000)}}},
		}},
	}
}

// gates are the feature gates at their defaults after set.
func gates(t *testing.T, set map[string]bool) *featuregates.Gates {
	t.Helper()
	g, err := featuregates.New(set)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testDeps returns dependencies with fakes and a registry holding the counter orchlet_test_total.
func testDeps(t *testing.T, clk clock.Clock) Deps {
	reg := prometheus.NewRegistry()
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "orchlet_test_total", Help: "A test counter."})
	counter.Add(3)
	reg.MustRegister(counter)
	return Deps{
		Clock:    clk,
		NodeName: nodeName,
		Pods:     testPods(),
		Stats:    fakeStats{summary: testSummary()},
		Configz:  func() any { return map[string]any{"maxPods": 110} },
		Gates:    gates(t, nil),
		Metrics:  reg,
		Logs:     &fakeLogs{},
		Streams:  &fakeStreams{backend: "http://127.0.0.1:1"},
		CertDir:  t.TempDir(),
		Listen:   loopback(nil),
	}
}

// loopback returns a listener factory that listens on 127.0.0.1 on a free port whatever the
// configured address, recording the configured one in asked.
func loopback(asked *[]string) func(network, address string) (net.Listener, error) {
	var mu sync.Mutex
	return func(network, address string) (net.Listener, error) {
		if asked != nil {
			mu.Lock()
			*asked = append(*asked, address)
			mu.Unlock()
		}
		return net.Listen(network, "127.0.0.1:0")
	}
}

// newClock is a mock clock at the real time, so that a self-signed serving certificate generated
// on it is valid for a real TLS client.
func newClock() *clock.Mock {
	clk := clock.NewMock()
	clk.Set(time.Now())
	return clk
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func testConfig() *v1beta1.OrchletConfiguration {
	cfg := v1beta1.NewDefault()
	cfg.Address = "127.0.0.1"
	return cfg
}

func start(t *testing.T, cfg *v1beta1.OrchletConfiguration, deps Deps) *Servers {
	t.Helper()
	s, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// httpsClient trusts the serving certificate in certDir and presents cert when given.
func httpsClient(t *testing.T, certDir string, cert *tls.Certificate) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(certDir, "orchlet.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in orchlet.crt")
	}
	config := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != nil {
		config.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: config}}
}

type response struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, client *http.Client, method, url, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: string(body), header: resp.Header}
}

// testCA signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial atomic.Int64

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) clientCert(t *testing.T, cn string, orgs ...string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeAPIServer answers TokenReview (tokens "alice-token" and "bob-token") and
// SubjectAccessReview (allowing what allow says), counting the reviews it receives.
type fakeAPIServer struct {
	allow func(spec authorizationv1.SubjectAccessReviewSpec) bool

	mu         sync.Mutex
	tokenCalls map[string]int
	sars       []authorizationv1.SubjectAccessReviewSpec
}

func newFakeAPIServer(t *testing.T, allow func(authorizationv1.SubjectAccessReviewSpec) bool) (*fakeAPIServer, *httptest.Server) {
	f := &fakeAPIServer{allow: allow, tokenCalls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+tokenReviewPath, func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.tokenCalls[review.Spec.Token]++
		f.mu.Unlock()
		switch review.Spec.Token {
		case "alice-token":
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"admins"}}}
		case "bob-token":
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "bob"}}
		default:
			review.Status = authenticationv1.TokenReviewStatus{Error: "unknown token"}
		}
		json.NewEncoder(w).Encode(review)
	})
	mux.HandleFunc("POST "+subjectAccessReviewPath, func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.sars = append(f.sars, review.Spec)
		f.mu.Unlock()
		review.Status.Allowed = f.allow(review.Spec)
		json.NewEncoder(w).Encode(review)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAPIServer) tokenCount(token string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls[token]
}

func (f *fakeAPIServer) reviews() []authorizationv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]authorizationv1.SubjectAccessReviewSpec(nil), f.sars...)
}
