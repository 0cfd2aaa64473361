package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/benbjohnson/clock"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
)

// writeAdmissionConfig writes an AdmissionConfiguration whose plugins are given as YAML.
func writeAdmissionConfig(t *testing.T, plugins string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission.yaml")
	data := "apiVersion: apiserver.config.orch.io/v1\nkind: AdmissionConfiguration\nplugins:\n" + plugins
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// eventRateLimitFile configures EventRateLimit through path, with a server bucket of one token
// refilled once a second, under Kubernetes' name of the group, which orch reads too.
const eventRateLimitFile = `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- type: Server
  qps: 1
  burst: 1
`

// createEvent posts a new event and answers the status code, Retry-After and body.
func createEvent(t *testing.T, client *http.Client, s *testServer, name string) (int, string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "events.orch.io/v1", "kind": "Event",
		"metadata":  map[string]any{"name": name},
		"eventTime": "2026-11-21T23:03:57.523342Z", "reportingController": "orch.io/test", "reportingInstance": "test-1",
		"action": "Tested", "reason": "Testing", "type": "Normal",
		"regarding": map[string]any{"kind": "Pod", "namespace": "default", "name": "web-0"},
	})
	resp, data := send(t, client, http.MethodPost, "https://"+s.addr+"/apis/events.orch.io/v1/namespaces/default/events", "", bytes.NewReader(body))
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(data)
}

// EventRateLimit enabled by flag and configured through a file next to the admission file:
// creates over the server bucket are refused with Kubernetes' message and a Retry-After. (The
// exact counts on a mock clock are the server package's tests; this server runs on the real
// clock, so it only waits for the first refusal.)
func TestEventRateLimitEnabledByFlag(t *testing.T) {
	config := writeAdmissionConfig(t, "- name: EventRateLimit\n  path: eventratelimit.yaml\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(config), "eventratelimit.yaml"), []byte(eventRateLimitFile), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) {
		o.AdmissionControlConfigFile = config
		o.EnableAdmissionPlugins = []string{"EventRateLimit"}
	})
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := createEvent(t, client, s, "first"); code != http.StatusCreated {
		t.Fatalf("first create: %d %s", code, body)
	}
	// One token a second: among 20 creates sent back to back, one is refused.
	for i := range 20 {
		code, retryAfter, body := createEvent(t, client, s, fmt.Sprintf("next-%d", i))
		if code == http.StatusCreated {
			continue
		}
		if code != http.StatusTooManyRequests || retryAfter != "1" || !strings.Contains(body, `"message":"Too many requests: limit reached on type Server for key "`) {
			t.Fatalf("refusal: %d Retry-After %q %s", code, retryAfter, body)
		}
		return
	}
	t.Fatal("20 creates in a row with one token a second were all accepted")
}

// As in Kubernetes, a configured plugin that is not enabled does nothing: every create passes.
// A configuration for a plugin that is not enabled would do nothing: orch refuses it at start
// (Kubernetes only logs it).
func TestEventRateLimitConfiguredButNotEnabled(t *testing.T) {
	config := writeAdmissionConfig(t, "- name: EventRateLimit\n  configuration:\n"+indent(eventRateLimitFile, "    "))
	o := app.NewOptions()
	o.DataDir = t.TempDir()
	o.AdmissionControlConfigFile = config
	err := app.Run(context.Background(), o, clock.New(), nil)
	if err == nil || !strings.Contains(err.Error(), `admission plugin "EventRateLimit" is configured but not enabled: enable it with --enable-admission-plugins=EventRateLimit`) {
		t.Fatalf("Run = %v, want the configured but disabled plugin refused", err)
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// The admission flags are checked as kube-apiserver checks them, with its messages.
func TestAdmissionFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*app.Options)
		want []string // empty when valid
	}{
		{"enable EventRateLimit", func(o *app.Options) { o.EnableAdmissionPlugins = []string{"EventRateLimit"} }, nil},
		{"disable EventRateLimit", func(o *app.Options) { o.DisableAdmissionPlugins = []string{"EventRateLimit"} }, nil},
		{"deprecated flag", func(o *app.Options) { o.AdmissionControl = []string{"EventRateLimit"} }, nil},
		{"a plugin orch does not have", func(o *app.Options) { o.EnableAdmissionPlugins = []string{"EventRateLimit", "NamespaceLifecycle"} },
			[]string{`enable-admission-plugins plugin "NamespaceLifecycle" is unknown`}},
		{"disabling one orch does not have", func(o *app.Options) { o.DisableAdmissionPlugins = []string{"ServiceAccount"} },
			[]string{`disable-admission-plugins plugin "ServiceAccount" is unknown`}},
		{"both ways", func(o *app.Options) {
			o.EnableAdmissionPlugins = []string{"EventRateLimit"}
			o.DisableAdmissionPlugins = []string{"EventRateLimit"}
		}, []string{"[EventRateLimit] in enable-admission-plugins and disable-admission-plugins overlapped"}},
		{"old and new flags", func(o *app.Options) {
			o.AdmissionControl = []string{"AlwaysAdmit"}
			o.EnableAdmissionPlugins = []string{"EventRateLimit"}
		}, []string{"admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive", `admission-control plugin "AlwaysAdmit" is unknown`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := app.NewOptions()
			tt.set(o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
