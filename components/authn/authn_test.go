package authn

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func request(authorization string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/apis/events.orch.io/v1/events", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

func TestNewTokenFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the error, in addition to the file path
	}{
		{
			name:    "too few columns",
			content: "# tokens\n\ntok1,alice,1\ntok2,bob\n",
			want:    []string{"line 4: must have at least 3 columns (token, user name, user uid), found 2"},
		},
		{
			name:    "single column",
			content: "tok1\n",
			want:    []string{"line 1: must have at least 3 columns", "found 1"},
		},
		{
			name:    "empty token",
			content: "tok1,alice,1\n,bob,2\n",
			want:    []string{"line 2: empty token"},
		},
		{
			name:    "duplicate token",
			content: "tok1,alice,1\n# comment\ntok2,bob,2\ntok1,carol,3\n",
			want:    []string{"line 4: duplicate token (first listed on line 1)"},
		},
		{
			name:    "every mistake is reported",
			content: "tok1,alice\n,bob,2\ntok3,carol,3\ntok3,dave,4\n",
			want:    []string{"line 1: must have at least 3 columns", "line 2: empty token", "line 4: duplicate token"},
		},
		{
			name:    "csv syntax error",
			content: "tok1,alice,1\ntok2,bo\"b,2\n",
			want:    []string{"line 2"},
		},
		{
			name:    "line numbers count a multi-line quoted field",
			content: "tok1,alice,1,\"g1,\ng2\"\ntok2,bob\n",
			want:    []string{"line 3: must have at least 3 columns"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			tf, err := NewTokenFile(path)
			if err == nil {
				t.Fatalf("NewTokenFile = %v, want an error", tf)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file %q", msg, path)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestNewTokenFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.csv")
	_, err := NewTokenFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("NewTokenFile(absent) error = %v, want a not-exist error naming the file", err)
	}
}

func TestTokenFileUsers(t *testing.T) {
	path := writeFile(t, strings.Join([]string{
		"# token,user,uid,groups",
		"",
		"tok-plain,alice,uid-a",
		`tok-groups,bob,uid-b,"dev,ops"`,
		`tok-spaces,carol,uid-c,"dev, ops ,,"`,
		"tok-one-group,dave,uid-d,admins",
		"tok-empty-groups,erin,uid-e,",
		"tok-extra-cols,frank,uid-f,g1,ignored",
		`tok-has-auth,gina,uid-g,"system:authenticated,dev"`,
		"tok-crlf,hank,uid-h\r",
		"",
	}, "\n"))
	tf, err := NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tf.Len() != 8 {
		t.Errorf("Len() = %d, want 8", tf.Len())
	}
	tests := []struct {
		token string
		want  UserInfo
	}{
		{"tok-plain", UserInfo{Name: "alice", UID: "uid-a", Groups: []string{AllAuthenticated}}},
		{"tok-groups", UserInfo{Name: "bob", UID: "uid-b", Groups: []string{"dev", "ops", AllAuthenticated}}},
		{"tok-spaces", UserInfo{Name: "carol", UID: "uid-c", Groups: []string{"dev", "ops", AllAuthenticated}}},
		{"tok-one-group", UserInfo{Name: "dave", UID: "uid-d", Groups: []string{"admins", AllAuthenticated}}},
		{"tok-empty-groups", UserInfo{Name: "erin", UID: "uid-e", Groups: []string{AllAuthenticated}}},
		{"tok-extra-cols", UserInfo{Name: "frank", UID: "uid-f", Groups: []string{"g1", AllAuthenticated}}},
		{"tok-has-auth", UserInfo{Name: "gina", UID: "uid-g", Groups: []string{AllAuthenticated, "dev"}}},
		{"tok-crlf", UserInfo{Name: "hank", UID: "uid-h", Groups: []string{AllAuthenticated}}},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			for i := 0; i < 2; i++ { // twice: the stored user must not be changed by a lookup
				user, ok, err := tf.AuthenticateRequest(request("Bearer " + tt.token))
				if err != nil || !ok {
					t.Fatalf("AuthenticateRequest = %v, %v, %v; want ok", user, ok, err)
				}
				if !reflect.DeepEqual(*user, tt.want) {
					t.Fatalf("user = %+v, want %+v", *user, tt.want)
				}
				user.Groups[0] = "mutated"
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name   string
		header string
		token  string
		ok     bool
	}{
		{"no header", "", "", false},
		{"bearer", "Bearer abc", "abc", true},
		{"lower-case scheme", "bearer abc", "abc", true},
		{"upper-case scheme", "BEARER abc", "abc", true},
		{"surrounding space trimmed", "  Bearer abc  ", "abc", true},
		{"text after the token ignored", "Bearer abc def", "abc", true},
		{"basic scheme", "Basic YWxpY2U6cHc=", "", false},
		{"scheme only", "Bearer", "", false},
		{"scheme and space only", "Bearer ", "", false},
		{"two spaces before the token", "Bearer  abc", "", false},
		{"scheme glued to token", "Bearerabc", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request("")
			r.Header.Set("Authorization", tt.header)
			token, ok := BearerToken(r)
			if token != tt.token || ok != tt.ok {
				t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tt.header, token, ok, tt.token, tt.ok)
			}
		})
	}
}

func TestTokenFileAuthenticateRequest(t *testing.T) {
	tf, err := NewTokenFile(writeFile(t, "secret,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		header  string
		ok      bool
		wantErr error
	}{
		{"no credential: no opinion", "", false, nil},
		{"other scheme: no opinion", "Basic YWxpY2U6cHc=", false, nil},
		{"known token", "Bearer secret", true, nil},
		{"case-insensitive scheme", "bEaReR secret", true, nil},
		{"unknown token", "Bearer wrong", false, ErrInvalidToken},
		{"prefix of a known token", "Bearer secre", false, ErrInvalidToken},
		{"known token as prefix", "Bearer secret2", false, ErrInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(tt.header)
			user, ok, err := tf.AuthenticateRequest(r)
			if ok != tt.ok || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("AuthenticateRequest = %v, %v, %v; want ok=%v err=%v", user, ok, err, tt.ok, tt.wantErr)
			}
			if ok && user.Name != "alice" {
				t.Errorf("user = %+v, want alice", user)
			}
			if ok && r.Header.Get("Authorization") != "" {
				t.Error("Authorization header kept after successful authentication")
			}
			if !ok && r.Header.Get("Authorization") != tt.header {
				t.Error("Authorization header changed by a failed authentication")
			}
		})
	}
}

func TestAnonymous(t *testing.T) {
	user, ok, err := Anonymous().AuthenticateRequest(request("Bearer anything"))
	want := UserInfo{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	if err != nil || !ok || !reflect.DeepEqual(*user, want) {
		t.Fatalf("Anonymous = %+v, %v, %v; want %+v", user, ok, err, want)
	}
}

type fixed struct {
	name string
	ok   bool
	err  error
	hits *[]string
}

func (f fixed) AuthenticateRequest(*http.Request) (*UserInfo, bool, error) {
	*f.hits = append(*f.hits, f.name)
	if f.ok {
		return &UserInfo{Name: f.name}, true, nil
	}
	return nil, false, f.err
}

func TestUnionOrder(t *testing.T) {
	errA, errB := errors.New("a rejects"), errors.New("b rejects")
	type spec struct {
		name string
		ok   bool
		err  error
	}
	tests := []struct {
		name      string
		members   []spec
		anonymous bool // Anonymous() appended last
		wantUser  string
		wantErrs  []error
		wantHits  []string
	}{
		{
			name:     "first ok wins",
			members:  []spec{{"a", true, nil}, {"b", true, nil}},
			wantUser: "a", wantHits: []string{"a"},
		},
		{
			name:     "no opinion passes on",
			members:  []spec{{"a", false, nil}, {"b", true, nil}},
			wantUser: "b", wantHits: []string{"a", "b"},
		},
		{
			name:     "an error does not stop later authenticators",
			members:  []spec{{"a", false, errA}, {"b", true, nil}},
			wantUser: "b", wantHits: []string{"a", "b"},
		},
		{
			name:     "all reject: errors joined",
			members:  []spec{{"a", false, errA}, {"b", false, errB}},
			wantErrs: []error{errA, errB}, wantHits: []string{"a", "b"},
		},
		{
			name:     "none has an opinion",
			members:  []spec{{"a", false, nil}, {"b", false, nil}},
			wantHits: []string{"a", "b"},
		},
		{
			name:     "empty union",
			wantHits: nil,
		},
		{
			name:      "rejection skips anonymous",
			members:   []spec{{"a", false, errA}, {"b", false, nil}},
			anonymous: true,
			wantErrs:  []error{errA}, wantHits: []string{"a", "b"},
		},
		{
			name:      "no opinion anywhere: anonymous",
			members:   []spec{{"a", false, nil}},
			anonymous: true,
			wantUser:  AnonymousUser, wantHits: []string{"a"},
		},
		{
			name:      "accepted before anonymous",
			members:   []spec{{"a", true, nil}},
			anonymous: true,
			wantUser:  "a", wantHits: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits []string
			var list []Authenticator
			for _, m := range tt.members {
				list = append(list, fixed{name: m.name, ok: m.ok, err: m.err, hits: &hits})
			}
			list = append(list, nil) // ignored
			if tt.anonymous {
				list = append(list, Anonymous())
			}
			user, ok, err := Union(list...).AuthenticateRequest(request(""))
			if ok != (tt.wantUser != "") || (ok && user.Name != tt.wantUser) {
				t.Errorf("user = %+v, ok = %v; want %q", user, ok, tt.wantUser)
			}
			if (err != nil) != (len(tt.wantErrs) > 0) {
				t.Errorf("err = %v, want %v", err, tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, does not wrap %v", err, w)
				}
			}
			if !reflect.DeepEqual(hits, tt.wantHits) {
				t.Errorf("asked %v, want %v", hits, tt.wantHits)
			}
		})
	}
}

// TestUnionTokenAndAnonymous is the API server's configuration: --token-auth-file with and
// without --anonymous-auth.
func TestUnionTokenAndAnonymous(t *testing.T) {
	tf, err := NewTokenFile(writeFile(t, "secret,alice,1,admins\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A second token source, as a webhook would be: it must still be asked after the file rejects.
	other := AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
		token, ok := BearerToken(r)
		if !ok {
			return nil, false, nil
		}
		if token == "other" {
			return &UserInfo{Name: "bob"}, true, nil
		}
		return nil, false, ErrInvalidToken
	})
	tests := []struct {
		name      string
		anonymous bool
		header    string
		wantUser  *UserInfo
		wantErr   bool
	}{
		{"known token, anonymous on", true, "Bearer secret",
			&UserInfo{Name: "alice", UID: "1", Groups: []string{"admins", AllAuthenticated}}, false},
		{"known token, anonymous off", false, "Bearer secret",
			&UserInfo{Name: "alice", UID: "1", Groups: []string{"admins", AllAuthenticated}}, false},
		{"token of the second source", true, "Bearer other", &UserInfo{Name: "bob"}, false},
		{"unknown token, anonymous on: error", true, "Bearer nope", nil, true},
		{"unknown token, anonymous off: error", false, "Bearer nope", nil, true},
		{"no token, anonymous on: system:anonymous", true, "",
			&UserInfo{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}, false},
		{"no token, anonymous off: not ok", false, "", nil, false},
		{"other scheme, anonymous on: system:anonymous", true, "Basic YWxpY2U6cHc=",
			&UserInfo{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := []Authenticator{tf, other}
			if tt.anonymous {
				list = append(list, Anonymous())
			}
			user, ok, err := Union(list...).AuthenticateRequest(request(tt.header))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrInvalidToken) {
				t.Errorf("err = %v, want ErrInvalidToken", err)
			}
			if ok != (tt.wantUser != nil) {
				t.Fatalf("ok = %v (user %+v), want user %+v", ok, user, tt.wantUser)
			}
			if ok && !reflect.DeepEqual(user, tt.wantUser) {
				t.Errorf("user = %+v, want %+v", user, tt.wantUser)
			}
		})
	}
}

func TestContext(t *testing.T) {
	if u, ok := UserFrom(context.Background()); ok || u != nil {
		t.Fatalf("UserFrom(empty) = %v, %v", u, ok)
	}
	want := &UserInfo{Name: "alice"}
	got, ok := UserFrom(WithUser(context.Background(), want))
	if !ok || got != want {
		t.Fatalf("UserFrom = %v, %v; want %v", got, ok, want)
	}
	if _, ok := UserFrom(WithUser(context.Background(), nil)); ok {
		t.Fatal("UserFrom(nil user) ok")
	}
}

func TestUserInfoJSON(t *testing.T) {
	u := UserInfo{Name: "alice", UID: "1", Groups: []string{"g"}, Extra: map[string][]string{"scopes": {"a"}}}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"username":"alice","uid":"1","groups":["g"],"extra":{"scopes":["a"]}}`
	if string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	if b, _ := json.Marshal(UserInfo{}); string(b) != `{}` {
		t.Errorf("empty json = %s, want {}", b)
	}
	c := u.DeepCopy()
	c.Groups[0], c.Extra["scopes"][0] = "x", "x"
	if u.Groups[0] != "g" || u.Extra["scopes"][0] != "a" {
		t.Error("DeepCopy shares memory with the original")
	}
}

// With only anonymous access configured, a presented bearer token is still a credential nobody
// accepted: 401, never a silent downgrade to system:anonymous.
func TestUnionAnonymousOnlyRejectsBearerToken(t *testing.T) {
	u := Union(Anonymous())
	if _, ok, err := u.AuthenticateRequest(request("Bearer whatever")); ok || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("bearer token with anonymous only: ok=%v err=%v, want ErrInvalidToken", ok, err)
	}
	user, ok, err := u.AuthenticateRequest(request(""))
	if err != nil || !ok || user.Name != AnonymousUser {
		t.Fatalf("no credential with anonymous only: user=%+v ok=%v err=%v, want system:anonymous", user, ok, err)
	}
}

func TestAnonymousForPaths(t *testing.T) {
	u := Union(AnonymousForPaths([]string{"/healthz", "/readyz"}))
	for _, tt := range []struct {
		path, header string
		wantOK       bool
		wantErr      bool
	}{
		{"/healthz", "", true, false},
		{"/readyz", "", true, false},
		{"/apis/events.orch.io/v1", "", false, false},
		{"/healthz/extra", "", false, false},
		{"/healthz", "Bearer unknown", false, true},
	} {
		r := request(tt.header)
		r.URL.Path = tt.path
		user, ok, err := u.AuthenticateRequest(r)
		if ok != tt.wantOK || (err != nil) != tt.wantErr {
			t.Errorf("%s %q: ok=%v err=%v, want ok=%v err=%v", tt.path, tt.header, ok, err, tt.wantOK, tt.wantErr)
		}
		if ok && user.Name != AnonymousUser {
			t.Errorf("%s: user %q", tt.path, user.Name)
		}
	}
}
