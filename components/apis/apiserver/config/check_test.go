package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFiles(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), maxFileSize), 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		authn   = "testdata/authentication/valid/full.yaml"
		authz   = "testdata/authorization/valid/webhook-defaults.yaml"
		enc     = "testdata/encryption/valid/all-providers.yaml"
		adm     = "testdata/admission/valid/plugins.yaml"
		tracing = "testdata/tracing/valid/endpoint-and-rate.yaml"
		badEnc  = "testdata/encryption/invalid/key-sizes.yaml"
	)
	tests := []struct {
		name       string
		files      []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{
			name:     "every kind valid",
			files:    []string{authn, authz, enc, adm, tracing},
			wantCode: 0,
			wantStdout: authn + ": ok (AuthenticationConfiguration)\n" +
				authz + ": ok (AuthorizationConfiguration)\n" +
				enc + ": ok (EncryptionConfiguration)\n" +
				adm + ": ok (AdmissionConfiguration)\n" +
				tracing + ": ok (TracingConfiguration)\n",
		},
		{
			name:       "one invalid file fails the run and lists every problem",
			files:      []string{tracing, badEnc},
			wantCode:   1,
			wantStdout: tracing + ": ok (TracingConfiguration)\n",
			wantStderr: badEnc + `:13: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]` + "\n" +
				badEnc + `:17: resources[0].providers[1].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 20, expected one of [16 24 32]` + "\n" +
				badEnc + `:21: resources[0].providers[2].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 24, expected one of [32]` + "\n",
		},
		{
			name:       "unknown kind",
			files:      []string{"testdata/files/webhook.kubeconfig"},
			wantCode:   1,
			wantStderr: `testdata/files/webhook.kubeconfig:1: apiVersion: Unsupported value: "v1": supported values: "apiserver.config.orch.io/v1"` + "\n" + `testdata/files/webhook.kubeconfig:2: kind: Unsupported value: "Config": supported values: "AdmissionConfiguration", "AuthenticationConfiguration", "AuthorizationConfiguration", "EncryptionConfiguration", "TracingConfiguration"` + "\n",
		},
		{
			name:       "missing file",
			files:      []string{"testdata/no-such-file.yaml"},
			wantCode:   1,
			wantStderr: "testdata/no-such-file.yaml: open testdata/no-such-file.yaml: no such file or directory\n",
		},
		{
			name:       "file too large",
			files:      []string{big},
			wantCode:   1,
			wantStderr: big + ": file is larger than 1048576 bytes\n",
		},
		{
			name:       "no file",
			wantCode:   2,
			wantStderr: "check-config: no files given\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := CheckFiles(tt.files, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tt.wantStdout)
			}
			if stderr.String() != tt.wantStderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestCheckAnonymousConflict(t *testing.T) {
	withAnonymous, err := LoadAuthentication("testdata/authentication/valid/anonymous-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	without, err := LoadAuthentication("testdata/authentication/valid/minimal-claim-mapping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		auth    *Authentication
		flagSet bool
		wantErr string
	}{
		{"anonymous section and explicit flag", withAnonymous, true,
			"testdata/authentication/valid/anonymous-only.yaml: anonymous: Forbidden: the --anonymous-auth flag cannot be set when the authentication configuration has an anonymous section"},
		{"anonymous section, flag unset", withAnonymous, false, ""},
		{"no anonymous section, flag set", without, true, ""},
		{"no authentication configuration", nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAnonymousConflict(tt.auth, tt.flagSet)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("got %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestAdmissionPluginConfig(t *testing.T) {
	tests := []struct {
		fixture, plugin, want string
	}{
		{"testdata/admission/valid/plugins.yaml", "EventRateLimit", "limits:\n- type: Server\n  qps: 5000\n  burst: 20000\n"},
		{"testdata/admission/valid/plugins.yaml", "ImagePolicyWebhook", `{"imagePolicy":{"allowTTL":50,"kubeConfigFile":"/etc/orch/imagepolicy.kubeconfig"}}`},
		{"testdata/admission/valid/plugins.yaml", "AlwaysPullImages", ""},
		{"testdata/admission/valid/plugins.yaml", "NotConfigured", ""},
		{"testdata/admission/valid/configuration-wins-over-path.yaml", "EventRateLimit", `{"limits":[{"qps":50,"type":"Server"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.plugin, func(t *testing.T) {
			a, err := LoadAdmission(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.PluginConfig(tt.plugin)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAdmissionCheckRegistered(t *testing.T) {
	a, err := LoadAdmission("testdata/admission/valid/plugins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckRegistered([]string{"AlwaysPullImages", "EventRateLimit", "ImagePolicyWebhook"}); err != nil {
		t.Errorf("all registered: %v", err)
	}
	err = a.CheckRegistered([]string{"AlwaysPullImages", "EventRateLimit"})
	want := `testdata/admission/valid/plugins.yaml: plugins[1].name: Unsupported value: "ImagePolicyWebhook": supported values: "AlwaysPullImages", "EventRateLimit"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestErrorNamesFileAndLinePerProblem(t *testing.T) {
	_, err := LoadAuthentication("testdata/authentication/invalid/username-prefix-missing.yaml")
	lines := strings.Split(err.Error(), "\n")
	want := []string{"testdata/authentication/invalid/username-prefix-missing.yaml:17: jwt[1].claimMappings.username.prefix: Required value: prefix must be set when claim is set"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
