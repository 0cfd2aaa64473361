package credentialprovider

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

const validProvider = `
- name: ecr
  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example.com:5000/team"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [get-credentials]
  env:
  - {name: REGION, value: eu-west-1}
`

// One file, or a directory's .json, .yaml and .yml files in lexicographic order (not its
// subdirectories), their providers merged.
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "one.yaml"), "apiVersion: orchlet.config.orch.io/v1\nkind: CredentialProviderConfig\nproviders:"+validProvider, 0o644)
	cfg, err := LoadConfig(filepath.Join(dir, "one.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if p.Name != "ecr" || len(p.MatchImages) != 2 || p.DefaultCacheDuration.Duration != 10*time.Minute || p.Args[0] != "get-credentials" || p.Env[0].Value != "eu-west-1" {
		t.Errorf("provider %+v", p)
	}

	conf := filepath.Join(dir, "conf.d")
	write(t, filepath.Join(conf, "20-b.json"), `{"apiVersion": "orchlet.config.orch.io/v1", "kind": "CredentialProviderConfig", "providers": [{"name": "b", "matchImages": ["b.example"], "defaultCacheDuration": "0s", "apiVersion": "credentialprovider.kubelet.k8s.io/v1"}]}`, 0o644)
	write(t, filepath.Join(conf, "10-a.yml"), "apiVersion: orchlet.config.orch.io/v1beta1\nkind: CredentialProviderConfig\nproviders:\n- {name: a, matchImages: [a.example], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1beta1}\n", 0o644)
	write(t, filepath.Join(conf, "notes.txt"), "not a configuration", 0o644)
	write(t, filepath.Join(conf, "nested", "00-broken.yaml"), "not: [a configuration", 0o644)
	cfg, err = LoadConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range cfg.Providers {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("merged providers %v, want a then b", names)
	}

	write(t, filepath.Join(conf, "30-dup.yaml"), "apiVersion: orchlet.config.orch.io/v1\nkind: CredentialProviderConfig\nproviders:\n- {name: a, matchImages: [a.example], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n", 0o644)
	if _, err := LoadConfig(conf); err == nil || !strings.Contains(err.Error(), `duplicate provider name "a" found in configuration file(s)`) {
		t.Errorf("a duplicate across files: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	write(t, filepath.Join(empty, "README"), "", 0o644)
	if _, err := LoadConfig(empty); err == nil || !strings.Contains(err.Error(), "no configuration files found in directory") {
		t.Errorf("an empty directory: %v", err)
	}
}

// The kubelet's validation, every problem named by its field; unknown fields and other kinds are
// refused by the strict decoding.
func TestLoadConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{"providers: []", []string{"providers: Required value: at least 1 item in plugins is required"}},
		{`providers:
- {name: "a/b", matchImages: [], apiVersion: credentialprovider.kubelet.k8s.io/v9, defaultCacheDuration: -1m}
- {name: "..", matchImages: ["x"], apiVersion: "", tokenAttributes: {serviceAccountTokenAudience: a}}`, []string{
			`providers[0].name: Invalid value: "a/b": provider name cannot contain '/'`,
			`providers[0].apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v9"`,
			`providers[0].matchImages: Required value: at least 1 item in matchImages is required`,
			`providers[0].defaultCacheDuration: Invalid value: "-1m0s": must be greater than or equal to 0`,
			`providers[1].name: Invalid value: "..": provider name cannot be '..'`,
			`providers[1].apiVersion: Required value`,
			`providers[1].defaultCacheDuration: Required value`,
			`providers[1].tokenAttributes.requireServiceAccount: Required value`,
			`providers[1].tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`,
			`providers[1].tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`,
		}},
		{`providers:
- name: sa
  matchImages: [x]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  tokenAttributes:
    serviceAccountTokenAudience: ""
    requireServiceAccount: false
    cacheType: Forever
    requiredServiceAccountAnnotationKeys: [example.com/role, "not a key", example.com/role]
    optionalServiceAccountAnnotationKeys: [example.com/role]`, []string{
			`providers[0].tokenAttributes.serviceAccountTokenAudience: Required value`,
			`providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`,
			`providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Invalid value: "not a key"`,
			`providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: "example.com/role"`,
			`providers[0].tokenAttributes: Invalid value: ["example.com/role"]: annotation keys cannot be both required and optional`,
			`providers[0].tokenAttributes.cacheType: Unsupported value: "Forever": supported values: ServiceAccount, Token`,
		}},
		{"providers:" + validProvider + "  cacheKeyType: Image\n", []string{`unknown field "providers[0].cacheKeyType"`}},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		write(t, path, "apiVersion: orchlet.config.orch.io/v1\nkind: CredentialProviderConfig\n"+tc.doc, 0o644)
		_, err := LoadConfig(path)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s:\n%v\nwant %q", tc.doc, err, w)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	write(t, path, "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), `must be CredentialProviderConfig of orchlet.config.orch.io/v1`) {
		t.Errorf("another kind: %v", err)
	}
}

// fakePlugin is a plugin script: it records its arguments, environment and request, and answers
// with $ANSWER's cache key type and duration for registry.example.com.
const fakePlugin = `#!/bin/sh
request=$(cat)
echo "$* REGION=$REGION HOME_SET=${HOME:+yes} $request" >> "$CALLS"
[ -n "$FAIL" ] && { echo "no credentials for you" >&2; exit 3; }
echo "{\"apiVersion\": \"${VERSION:-credentialprovider.kubelet.k8s.io/v1}\", \"kind\": \"CredentialProviderResponse\", \"cacheKeyType\": \"$KEYTYPE\", $DURATION \"auth\": {\"registry.example.com\": {\"username\": \"u\", \"password\": \"p\"}}}"
`

type fixture struct {
	ps    *Providers
	clk   *clock.Mock
	calls string
}

func newFixture(t *testing.T, env ...EnvVar) *fixture {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin", "fake"), fakePlugin, 0o755)
	f := &fixture{clk: clock.NewMock(), calls: filepath.Join(dir, "calls")}
	cfg := &Config{Providers: []Provider{{
		Name: "fake", MatchImages: []string{"registry.example.com", "*.example.org"}, DefaultCacheDuration: &metav1.Duration{Duration: 5 * time.Minute},
		APIVersion: "credentialprovider.kubelet.k8s.io/v1", Args: []string{"get"}, Env: append([]EnvVar{{Name: "CALLS", Value: f.calls}, {Name: "REGION", Value: "eu"}}, env...),
	}}}
	var err error
	if f.ps, err = New(cfg, filepath.Join(dir, "bin"), f.clk, klog.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) runs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// The plugin is asked only for images its matchImages match, with the request on stdin, its
// arguments and the agent's environment with its own variables; its answer is the credentials.
func TestProvideRunsThePlugin(t *testing.T) {
	f := newFixture(t, EnvVar{Name: "KEYTYPE", Value: "Image"})
	ctx := context.Background()
	if got := f.ps.Provide(ctx, Pod{}, "quay.io/team/app"); got != nil || f.runs(t) != nil {
		t.Fatalf("an image no matchImages matches: %v, runs %v", got, f.runs(t))
	}
	got := f.ps.Provide(ctx, Pod{}, "registry.example.com/team/app")
	if len(got) != 1 || got[0]["registry.example.com"] != (Auth{Username: "u", Password: "p"}) {
		t.Fatalf("credentials %v", got)
	}
	runs := f.runs(t)
	want := `get REGION=eu HOME_SET=yes {"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"registry.example.com/team/app"}`
	if len(runs) != 1 || runs[0] != want {
		t.Errorf("runs %q\nwant %q", runs, want)
	}
}

// An answer is kept for its cacheDuration (or the provider's default), by image, registry or
// globally, on the agent's clock; a cacheDuration of 0 keeps nothing.
func TestProvideCaches(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		keyType, duration string
		// asked: the images asked in turn, a minute apart; runs: how many times the plugin ran.
		asked []string
		runs  int
	}{
		{"Image", "", []string{"registry.example.com/a", "registry.example.com/a", "registry.example.com/b"}, 2},
		{"Registry", "", []string{"registry.example.com/a", "registry.example.com/b", "x.example.org/c"}, 2},
		{"Global", "", []string{"registry.example.com/a", "x.example.org/c", "y.example.org/d"}, 1},
		{"Global", `"cacheDuration": "0s",`, []string{"registry.example.com/a", "registry.example.com/a"}, 2},
		{"Global", `"cacheDuration": "90s",`, []string{"registry.example.com/a", "registry.example.com/a", "registry.example.com/a"}, 2},
		{"Global", "", []string{"registry.example.com/a", "registry.example.com/a", "registry.example.com/a", "registry.example.com/a", "registry.example.com/a", "registry.example.com/a"}, 2},
	} {
		f := newFixture(t, EnvVar{Name: "KEYTYPE", Value: tc.keyType}, EnvVar{Name: "DURATION", Value: tc.duration})
		for _, image := range tc.asked {
			if got := f.ps.Provide(ctx, Pod{}, image); len(got) != 1 {
				t.Fatalf("%s %s: %s gave %v", tc.keyType, tc.duration, image, got)
			}
			f.clk.Add(time.Minute)
		}
		if got := len(f.runs(t)); got != tc.runs {
			t.Errorf("%s %s asked %v: %d runs, want %d", tc.keyType, tc.duration, tc.asked, got, tc.runs)
		}
	}
}

// A plugin that fails, answers another version or an unknown cache key type gives nothing.
func TestProvideFailures(t *testing.T) {
	for _, env := range [][]EnvVar{
		{{Name: "FAIL", Value: "1"}, {Name: "KEYTYPE", Value: "Image"}},
		{{Name: "VERSION", Value: "credentialprovider.kubelet.k8s.io/v1beta1"}, {Name: "KEYTYPE", Value: "Image"}},
		{{Name: "KEYTYPE", Value: "Forever"}},
	} {
		f := newFixture(t, env...)
		if got := f.ps.Provide(context.Background(), Pod{}, "registry.example.com/a"); got != nil {
			t.Errorf("%v: credentials %v, want none", env, got)
		}
	}
}

// The plugins' directory and each plugin must exist at start.
func TestNewRefusesMissingBinaries(t *testing.T) {
	cfg := &Config{Providers: []Provider{{Name: "absent", DefaultCacheDuration: &metav1.Duration{}}}}
	dir := t.TempDir()
	if _, err := New(cfg, filepath.Join(dir, "none"), clock.NewMock(), klog.Background()); err == nil || !strings.Contains(err.Error(), "plugin binary directory "+filepath.Join(dir, "none")+" did not exist") {
		t.Errorf("no directory: %v", err)
	}
	if _, err := New(cfg, dir, clock.NewMock(), klog.Background()); err == nil || !strings.Contains(err.Error(), "plugin binary executable "+filepath.Join(dir, "absent")+" did not exist") {
		t.Errorf("no binary: %v", err)
	}
}

func TestURLsMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, target string
		want         bool
	}{
		{"registry.example.com", "registry.example.com/team/app", true},
		{"*.example.com", "registry.example.com/app", true},
		{"*.example.com", "example.com/app", false},
		{"registry.example.com:5000", "registry.example.com/app", false},
		{"registry.example.com:5000/team", "registry.example.com:5000/team/app", true},
		{"registry.example.com/team", "registry.example.com/other/app", false},
		{"*.*.amazonaws.com", "123.dkr.ecr.eu-west-1.amazonaws.com/app", false},
		{"*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.eu-west-1.amazonaws.com/app", true},
	} {
		if got := URLsMatch(tc.glob, tc.target); got != tc.want {
			t.Errorf("URLsMatch(%q, %q) = %v", tc.glob, tc.target, got)
		}
	}
}
