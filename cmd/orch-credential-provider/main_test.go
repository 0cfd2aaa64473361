package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plugin answers with the credentials whose registry globs match the image, for the image's
// registry, in the request's protocol version.
func TestAnswersWithMatchingCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "creds.yaml")
	if err := os.WriteFile(file, []byte("registry.example.com:5000: {username: puller, password: s3cret}\n\"*.corp.example\": {username: ci, password: token}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	in := strings.NewReader(`{"apiVersion": "credentialprovider.kubelet.k8s.io/v1", "kind": "CredentialProviderRequest", "image": "registry.example.com:5000/team/app"}`)
	if err := run([]string{"--credentials=" + file, "--cache-duration=10m"}, in, &out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","auth":{"registry.example.com:5000":{"password":"s3cret","username":"puller"}},"cacheDuration":"10m0s","cacheKeyType":"Registry","kind":"CredentialProviderResponse"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("answer %s\nwant   %s", b, want)
	}
}

func TestRefusesWhatItCannotAnswer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "creds.yaml")
	if err := os.WriteFile(file, []byte("registry.example.com: {username: u, password: p}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		in   string
		want string
	}{
		{nil, `{}`, "--credentials is required"},
		{[]string{"--credentials=" + file}, `{"apiVersion": "v1", "kind": "Pod"}`, `want a CredentialProviderRequest`},
		{[]string{"--credentials=" + file}, `not json`, "reading the CredentialProviderRequest on stdin"},
		{[]string{"--credentials=/nonexistent"}, `{}`, "/nonexistent"},
	} {
		if err := run(tc.args, strings.NewReader(tc.in), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v with %s: %v, want %q", tc.args, tc.in, err, tc.want)
		}
	}
}
