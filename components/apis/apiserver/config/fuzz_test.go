package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// maxParseTime flags an input that makes a loader crawl: config files are tiny, so seconds mean a
// hang in the making, not a slow machine.
const maxParseTime = 5 * time.Second

// fuzzParse seeds the fuzzer with every fixture of dir and checks that parse never panics, never
// hangs, and returns either a configuration or a *FileError listing at least one problem.
func fuzzParse[T any](f *testing.F, dir string, parse func(name string, data []byte) (*T, error)) {
	for _, validity := range []string{"valid", "invalid"} {
		for _, ext := range []string{"*.yaml", "*.json"} {
			files, err := filepath.Glob(filepath.Join("testdata", dir, validity, ext))
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data, parse)
	})
}

// checkParse parses data and fails on a hang, on no result without error, or on an error that is
// not a *FileError whose every line names the file.
func checkParse[T any](t *testing.T, data []byte, parse func(name string, data []byte) (*T, error)) {
	t.Helper()
	// A hung parse never returns to be judged, so a watchdog crashes the worker instead, which
	// makes the fuzzer save the input.
	watchdog := time.AfterFunc(maxParseTime, func() {
		panic(fmt.Sprintf("parse still running after %v on %q", maxParseTime, data))
	})
	cfg, err := parse("fuzz/input.yaml", data)
	watchdog.Stop()
	if err == nil {
		if cfg == nil {
			t.Fatal("no error and no configuration")
		}
		return
	}
	var fe *FileError
	if !errors.As(err, &fe) || len(fe.Problems) == 0 {
		t.Fatalf("error %v (%T) is not a FileError with problems", err, err)
	}
	for _, line := range strings.Split(fe.Error(), "\n") {
		if !strings.HasPrefix(line, "fuzz/input.yaml") {
			t.Fatalf("error line %q does not name the file", line)
		}
	}
}

func FuzzParseAuthentication(f *testing.F) { fuzzParse(f, "authentication", ParseAuthentication) }
func FuzzParseAuthorization(f *testing.F)  { fuzzParse(f, "authorization", ParseAuthorization) }
func FuzzParseEncryption(f *testing.F)     { fuzzParse(f, "encryption", ParseEncryption) }
func FuzzParseAdmission(f *testing.F)      { fuzzParse(f, "admission", ParseAdmission) }
func FuzzParseTracing(f *testing.F)        { fuzzParse(f, "tracing", ParseTracing) }

// FuzzCELExpression puts arbitrary text in every expression slot of an authentication and an
// authorization file, so the fuzzer spends itself on CEL compilation rather than on YAML syntax.
func FuzzCELExpression(f *testing.F) {
	for _, seed := range []string{
		"claims.sub", "'oidc:' + claims.email", "claims.?email.orValue('')", "claims[\"email_verified\"]",
		"[claims.a, 'b']", "claims.groups.split(',')", "!user.username.startsWith('system:')",
		"has(request.resourceAttributes) && request.resourceAttributes.namespace == 'kube-system'",
		"request.groups.exists(g, g == 'x')", "claims.x ==", "{'a': 1}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		authn, err := json.Marshal(map[string]any{
			"apiVersion": "apiserver.config.orch.io/v1",
			"kind":       "AuthenticationConfiguration",
			"jwt": []any{map[string]any{
				"issuer":               map[string]any{"url": "https://issuer.example.com", "audiences": []string{"a"}},
				"claimValidationRules": []any{map[string]any{"expression": expr}},
				"claimMappings": map[string]any{
					"username": map[string]any{"expression": expr},
					"groups":   map[string]any{"expression": expr},
					"uid":      map[string]any{"expression": expr},
					"extra":    []any{map[string]any{"key": "example.com/x", "valueExpression": expr}},
				},
				"userValidationRules": []any{map[string]any{"expression": expr}},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkParse(t, authn, ParseAuthentication)
		authz, err := json.Marshal(map[string]any{
			"apiVersion": "apiserver.config.orch.io/v1",
			"kind":       "AuthorizationConfiguration",
			"authorizers": []any{map[string]any{
				"type": "Webhook",
				"name": "w",
				"webhook": map[string]any{
					"timeout":                    "1s",
					"subjectAccessReviewVersion": "v1",
					"matchConditionSubjectAccessReviewVersion": "v1",
					"failurePolicy":   "Deny",
					"connectionInfo":  map[string]any{"type": "InClusterConfig"},
					"matchConditions": []any{map[string]any{"expression": expr}},
				},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkParse(t, authz, ParseAuthorization)
	})
}
