package conformance

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"
)

func authzSteps() []StepDef {
	return []StepDef{
		{`^its webhook is a SubjectAccessReview server answering "(allowed|denied|no opinion)"$`, func(w *World) any { return w.startSARWebhook }},
		{`^the webhook answers "(allowed|denied|no opinion)" in the other namespace$`, func(w *World) any { return w.webhookAnswersOther }},
		{`^the webhook (goes down|answers malformed JSON|answers after the timeout)$`, func(w *World) any { return w.webhookFails }},
		{`^the webhook was asked about (events|nodes) (\d+) times?$`, func(w *World) any { return w.webhookAsked }},
		{`^(\d+) seconds pass$`, func(w *World) any {
			return func(n int) error { time.Sleep(time.Duration(n) * time.Second); return nil }
		}},
	}
}

// sarWebhook is a SubjectAccessReview webhook over HTTPS. It allows every non-resource request, so
// a server asking it can be probed; resource requests get the answer of their namespace.
type sarWebhook struct {
	srv      *httptest.Server
	resource string // the Event API's resource, whose reviews are counted
	other    string // the other namespace

	mu          sync.Mutex
	answer      string // for resource requests outside the other namespace
	otherAnswer string
	failure     string         // how it fails, once told to
	asked       map[string]int // reviews by resource
}

// startSARWebhook starts the webhook the valid AuthorizationConfiguration's authorizer reaches,
// replacing the kubeconfig file the document names.
func (w *World) startSARWebhook(answer string) error {
	if err := w.needDoc(); err != nil {
		return err
	}
	api := w.t.Profile.APIServer
	if api == nil {
		return fmt.Errorf("the target has no API server")
	}
	h := &sarWebhook{resource: api.Resource, other: api.Namespaces[1], answer: answer, otherAnswer: answer, asked: map[string]int{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	w.cleanup = append(w.cleanup, h.srv.Close)
	w.webhook = h
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster:
    server: %s/authorize
    certificate-authority-data: %s
users:
- name: api-server
  user:
    token: conformance
contexts:
- name: webhook
  context: {cluster: webhook, user: api-server}
current-context: webhook
`, h.srv.URL, base64.StdEncoding.EncodeToString(ca))
	return os.WriteFile(filepath.Join(w.dir, "webhook.kubeconfig"), []byte(kubeconfig), 0o600)
}

func (w *World) needWebhook() (*sarWebhook, error) {
	if w.webhook == nil {
		return nil, fmt.Errorf("no webhook: start with \"its webhook is a SubjectAccessReview server answering ...\"")
	}
	return w.webhook, nil
}

func (w *World) webhookAnswersOther(answer string) error {
	h, err := w.needWebhook()
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.otherAnswer = answer
	return nil
}

func (w *World) webhookFails(how string) error {
	h, err := w.needWebhook()
	if err != nil {
		return err
	}
	if how == "goes down" {
		h.srv.Close()
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failure = how
	return nil
}

// webhookAsked checks the reviews about a resource: "events" stands for the Event API's resource.
func (w *World) webhookAsked(resource string, n int) error {
	h, err := w.needWebhook()
	if err != nil {
		return err
	}
	if resource == "events" {
		resource = h.resource
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asked[resource] != n {
		return fmt.Errorf("the webhook was asked about %s %d times, want %d", resource, h.asked[resource], n)
	}
	return nil
}

func (h *sarWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var review struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			ResourceAttributes *struct {
				Namespace string `json:"namespace"`
				Resource  string `json:"resource"`
			} `json:"resourceAttributes"`
		} `json:"spec"`
	}
	if err != nil || json.Unmarshal(body, &review) != nil {
		http.Error(rw, "not a SubjectAccessReview", http.StatusBadRequest)
		return
	}
	status := map[string]any{"allowed": true}
	h.mu.Lock()
	failure := h.failure
	if a := review.Spec.ResourceAttributes; a != nil {
		h.asked[a.Resource]++
		answer := h.answer
		if a.Namespace == h.other {
			answer = h.otherAnswer
		}
		switch answer {
		case "denied":
			status = map[string]any{"allowed": false, "denied": true, "reason": "the conformance webhook denies"}
		case "no opinion":
			status = map[string]any{"allowed": false}
		}
	}
	h.mu.Unlock()
	switch failure {
	case "answers malformed JSON":
		_, _ = rw.Write([]byte(`{"status": {"allowed": tru`))
		return
	case "answers after the timeout":
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "SubjectAccessReview", "status": status})
}
