package app_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
)

// An AuthenticationConfiguration's anonymous conditions replace --anonymous-auth: anonymous
// requests reach only the listed paths.
func TestAnonymousConditionsFromAuthenticationConfig(t *testing.T) {
	file, err := filepath.Abs("../../apis/apiserver/config/testdata/authentication/valid/anonymous-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) { o.AuthenticationConfig = file })
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/healthz": http.StatusOK,
		"/apis/events.orch.io/v1/namespaces/default/events": http.StatusUnauthorized,
		"/version": http.StatusUnauthorized,
	} {
		resp, err := client.Get("https://" + s.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// A valid file the server can honour does not stop it: an AdmissionConfiguration naming no plugin.
func TestHonourableAdmissionConfigStarts(t *testing.T) {
	file, err := filepath.Abs("../../apis/apiserver/config/testdata/admission/valid/no-plugins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) { o.AdmissionControlConfigFile = file })
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get("https://" + s.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %d", resp.StatusCode)
	}
}
