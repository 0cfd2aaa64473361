package generic_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"orch.io/orch/components/apiserver/registry/generic"
)

// FuzzDecodeContinue: any token decodes to an error or to a key under the list prefix with a
// revision, and a token the server made decodes to what it was made of. (Its first find, an
// invalid UTF-8 key, is kept in testdata as a seed.)
func FuzzDecodeContinue(f *testing.F) {
	for _, key := range []string{"/registry/pods/default/a", "/registry/pods/default/../kube-system/b", "/registry/pods/default/"} {
		token, err := generic.EncodeContinue(key, "/registry/pods/default/", 7)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(token, key, int64(7))
	}
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi94In0", "/x", int64(-1))
	f.Fuzz(func(t *testing.T, token, key string, revision int64) {
		const prefix = "/registry/pods/default/"
		if got, rev, err := generic.DecodeContinue(token, prefix); err == nil {
			if !strings.HasPrefix(got, prefix) || strings.Contains(got, "/../") || rev == 0 {
				t.Fatalf("token %q decodes to %q at %d", token, got, rev)
			}
		}
		made, err := generic.EncodeContinue(prefix+key, prefix, revision)
		if err != nil {
			t.Fatal(err)
		}
		got, rev, err := generic.DecodeContinue(made, prefix)
		if err != nil || !utf8.ValidString(key) {
			// An empty, unclean or zero-revision start is refused; JSON carries invalid UTF-8 as
			// U+FFFD, and no stored key holds any (names are validated).
			return
		}
		if got != prefix+strings.TrimPrefix(key, "/") || rev != revision {
			t.Fatalf("EncodeContinue(%q, %d) decodes to %q at %d", key, revision, got, rev)
		}
	})
}
