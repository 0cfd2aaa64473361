package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --peer, like --attackers and --memory-after, needs --exhaust, and must name a file.
func TestCheckExhaustFlags(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	given := func(names ...string) func(string) bool {
		return func(name string) bool {
			for _, n := range names {
				if n == name {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		name    string
		o       options
		changed func(string) bool
		wantErr string
	}{
		{"no exhaust, no flags", options{}, given(), ""},
		{"peer without exhaust", options{peer: bin}, given("peer"), "--peer needs --exhaust"},
		{"attackers without exhaust", options{}, given("attackers"), "--attackers needs --exhaust"},
		{"peer with exhaust", options{exhaust: time.Second, peer: bin}, given("peer"), ""},
		{"peer missing", options{exhaust: time.Second, peer: filepath.Join(dir, "nothing")}, given("peer"), "--peer: stat"},
		{"peer a directory", options{exhaust: time.Second, peer: dir}, given("peer"), "a directory, not kube-apiserver's binary"},
	} {
		err := checkExhaustFlags(c.o, c.changed)
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
}
