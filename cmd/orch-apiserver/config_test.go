package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"orch.io/orch/components/freeport"
)

// fixture is a configuration file of the config package's testdata, as an absolute path because
// the binary runs in a scratch directory.
func fixture(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "components", "apis", "apiserver", "config", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// check-config is what a user runs in CI: exit 0 with one ok line per valid file, 1 with every
// problem of every invalid file, 2 without files.
func TestCheckConfig(t *testing.T) {
	valid := []string{fixture(t, "authentication/valid/full.yaml"), fixture(t, "tracing/valid/endpoint-and-rate.yaml")}
	stdout, stderr, code := run(t, append([]string{"check-config"}, valid...)...)
	if code != 0 || !strings.Contains(stdout, valid[0]+": ok (AuthenticationConfiguration)") || !strings.Contains(stdout, valid[1]+": ok (TracingConfiguration)") {
		t.Fatalf("valid files: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	bad := fixture(t, "authentication/invalid/audiences-empty-entry-and-duplicate.yaml")
	_, stderr, code = run(t, "check-config", valid[0], bad)
	if code != 1 || !strings.Contains(stderr, "jwt[0].issuer.audiences[1]: Required value") || !strings.Contains(stderr, `jwt[0].issuer.audiences[2]: Duplicate value: "a"`) {
		t.Fatalf("invalid file: exit %d, stderr %q", code, stderr)
	}
	if _, _, code = run(t, "check-config"); code != 2 {
		t.Fatalf("no files: exit %d, want 2", code)
	}
}

// The configuration flags refuse an invalid file, a forbidden combination, and any valid setting
// this server cannot enforce yet, naming each.
func TestConfigFlagsRefuseToStart(t *testing.T) {
	authnValid := fixture(t, "authentication/valid/full.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"invalid authentication file", []string{"--authentication-config", fixture(t, "authentication/invalid/audiences-empty-entry-and-duplicate.yaml")},
			[]string{"--authentication-config", "jwt[0].issuer.audiences[1]: Required value"}},
		{"anonymous section with --anonymous-auth", []string{"--authentication-config", fixture(t, "authentication/valid/anonymous-only.yaml"), "--anonymous-auth=true"},
			[]string{"anonymous: Forbidden: the --anonymous-auth flag cannot be set"}},
		{"egress selection without an egress selector configuration", []string{"--authentication-config", authnValid},
			[]string{"--authentication-config", `jwt[0].issuer.egressSelectorType "controlplane": orch-apiserver has no --egress-selector-config-file`}},
		{"authorization config with --authorization-mode", []string{"--authorization-config", firstFile(t, "authorization/valid"), "--authorization-mode", "AlwaysAllow"},
			[]string{"--authorization-config and --authorization-mode are mutually exclusive"}},
		{"kms v1, deprecated and off by default", []string{"--encryption-provider-config", fixture(t, "encryption/valid/kms-defaults.yaml")},
			[]string{"--encryption-provider-config", `resources[0].providers[0].kms ("plugin")`, "KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead."}},
		{"admission plugins orch does not have", []string{"--admission-control-config-file", fixture(t, "admission/valid/plugins.yaml")},
			[]string{"--admission-control-config-file", `plugins[1].name: Unsupported value: "ImagePolicyWebhook": supported values: "EventRateLimit"`, `plugins[2].name: Unsupported value: "AlwaysPullImages"`}},
		{"enabling a plugin orch does not have", []string{"--enable-admission-plugins", "EventRateLimit,NamespaceLifecycle"},
			[]string{`enable-admission-plugins plugin "NamespaceLifecycle" is unknown`}},
		{"a token issuer without a signing key", []string{"--service-account-issuer", "https://orch.example"},
			[]string{"--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together"}},
		{"service account lookup off", []string{"--service-account-lookup=false"}, []string{"--service-account-lookup=false: orch issues bound tokens only"}},
		{"EventRateLimit enabled without a configuration", []string{"--enable-admission-plugins", "EventRateLimit"},
			[]string{`couldn't init admission plugin "EventRateLimit": limits: Invalid value: null: must not be empty`}},
		{"EventRateLimit with a bad configuration", []string{"--enable-admission-plugins", "EventRateLimit", "--admission-control-config-file", fixture(t, "admission/valid/configuration-wins-over-path.yaml")},
			[]string{"--admission-control-config-file", `couldn't init admission plugin "EventRateLimit"`, `apiVersion: Unsupported value: ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freeport.For(t))}, tc.args...)
			_, stderr, code := run(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// firstFile is a fixture of dir, for cases where any valid file of a kind will do.
func firstFile(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(fixture(t, dir))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no fixtures in %s: %v", dir, err)
	}
	return fixture(t, filepath.Join(dir, entries[0].Name()))
}
