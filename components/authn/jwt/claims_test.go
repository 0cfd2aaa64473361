package jwt

import (
	"reflect"
	"strings"
	"testing"

	"orch.io/orch/components/authn"
)

var (
	prefixed = map[string]any{"claim": "sub", "prefix": "oidc:"}
	plain    = map[string]any{"claim": "sub", "prefix": ""}
)

func TestClaimMappingsAndRules(t *testing.T) {
	tests := []struct {
		name string
		// mappings are the claimMappings; username defaults to prefixed.
		mappings  map[string]any
		rules     []map[string]any
		userRules []map[string]any
		claims    map[string]any
		want      *authn.UserInfo
		wantErr   string
	}{
		// username
		{name: "username claim, empty prefix", mappings: map[string]any{"username": plain}, want: &authn.UserInfo{Name: "alice"}},
		{name: "username claim, prefix", want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "username claim not a string", mappings: map[string]any{"username": map[string]any{"claim": "login", "prefix": ""}},
			claims: map[string]any{"login": 5}, wantErr: `parse username claims "login": json: cannot unmarshal number`},
		{name: "username expression", mappings: map[string]any{"username": map[string]any{"expression": "'u:' + claims.sub"}},
			want: &authn.UserInfo{Name: "u:alice"}},
		{name: "username expression empty", mappings: map[string]any{"username": map[string]any{"expression": "claims.sub"}},
			claims: map[string]any{"sub": ""}, wantErr: "empty username via CEL expression is not allowed"},
		{name: "username expression not a string", mappings: map[string]any{"username": map[string]any{"expression": "claims.n"}},
			claims: map[string]any{"n": 5}, wantErr: "username claim expression must return a string"},
		{name: "username expression on a missing claim", mappings: map[string]any{"username": map[string]any{"expression": "claims.login"}},
			wantErr: "error evaluating username claim expression: no such key: login"},

		// the automatic email_verified rule of username.claim email
		{name: "email, email_verified absent", mappings: map[string]any{"username": map[string]any{"claim": "email", "prefix": ""}},
			claims: map[string]any{"email": "ada@example.com"}, want: &authn.UserInfo{Name: "ada@example.com"}},
		{name: "email, email_verified true", mappings: map[string]any{"username": map[string]any{"claim": "email", "prefix": ""}},
			claims: map[string]any{"email": "ada@example.com", "email_verified": true}, want: &authn.UserInfo{Name: "ada@example.com"}},
		{name: "email, email_verified false", mappings: map[string]any{"username": map[string]any{"claim": "email", "prefix": ""}},
			claims: map[string]any{"email": "ada@example.com", "email_verified": false}, wantErr: "oidc: email not verified"},
		{name: "email, email_verified a string", mappings: map[string]any{"username": map[string]any{"claim": "email", "prefix": ""}},
			claims: map[string]any{"email": "ada@example.com", "email_verified": "true"}, wantErr: "parse 'email_verified' claim"},
		{name: "email expression with the explicit rule", mappings: map[string]any{"username": map[string]any{"expression": "claims.email"}},
			rules:  []map[string]any{{"expression": "claims.?email_verified.orValue(true) == true", "message": "email not verified"}},
			claims: map[string]any{"email": "ada@example.com", "email_verified": false}, wantErr: "failed: email not verified"},

		// groups
		{name: "groups claim array with prefix, empty names dropped",
			mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": "g:"}},
			claims:   map[string]any{"groups": []string{"admins", "", "devs"}},
			want:     &authn.UserInfo{Name: "oidc:alice", Groups: []string{"g:admins", "g:devs"}}},
		{name: "groups claim string", mappings: map[string]any{"groups": map[string]any{"claim": "role", "prefix": ""}},
			claims: map[string]any{"role": "admin"}, want: &authn.UserInfo{Name: "oidc:alice", Groups: []string{"admin"}}},
		{name: "groups claim empty string", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": "g:"}},
			claims: map[string]any{"groups": ""}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups claim empty array", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": "g:"}},
			claims: map[string]any{"groups": []string{}}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups claim null", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": "g:"}},
			claims: map[string]any{"groups": jsonNull}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups claim absent", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": "g:"}},
			want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups claim a number", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": ""}},
			claims: map[string]any{"groups": 7}, wantErr: `parse groups claim "groups"`},
		{name: "groups claim distributed", mappings: map[string]any{"groups": map[string]any{"claim": "groups", "prefix": ""}},
			claims: map[string]any{
				"_claim_names":   map[string]any{"groups": "src1"},
				"_claim_sources": map[string]any{"src1": map[string]any{"endpoint": "https://claims.example.com"}},
			}, wantErr: `groups claim "groups" is a distributed claim`},
		{name: "groups expression list", mappings: map[string]any{"groups": map[string]any{"expression": "claims.roles.map(r, 'r:' + r)"}},
			claims: map[string]any{"roles": []string{"a", "b"}}, want: &authn.UserInfo{Name: "oidc:alice", Groups: []string{"r:a", "r:b"}}},
		{name: "groups expression literal list with empty string", mappings: map[string]any{"groups": map[string]any{"expression": "['x', '', 'y']"}},
			want: &authn.UserInfo{Name: "oidc:alice", Groups: []string{"x", "y"}}},
		{name: "groups expression empty string", mappings: map[string]any{"groups": map[string]any{"expression": "claims.team"}},
			claims: map[string]any{"team": ""}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups expression null", mappings: map[string]any{"groups": map[string]any{"expression": "claims.team"}},
			claims: map[string]any{"team": jsonNull}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "groups expression list with a number", mappings: map[string]any{"groups": map[string]any{"expression": "claims.team"}},
			claims: map[string]any{"team": []any{"a", 1}}, wantErr: "error evaluating group claim expression: expression must return a string or a list of strings"},
		{name: "groups expression a number", mappings: map[string]any{"groups": map[string]any{"expression": "claims.team"}},
			claims: map[string]any{"team": 1}, wantErr: "expression must return a string or a list of strings"},

		// uid
		{name: "uid claim", mappings: map[string]any{"uid": map[string]any{"claim": "oid"}},
			claims: map[string]any{"oid": "u-1"}, want: &authn.UserInfo{Name: "oidc:alice", UID: "u-1"}},
		{name: "uid claim absent", mappings: map[string]any{"uid": map[string]any{"claim": "oid"}},
			wantErr: `parse uid claim "oid": claim not present`},
		{name: "uid claim not a string", mappings: map[string]any{"uid": map[string]any{"claim": "oid"}},
			claims: map[string]any{"oid": 12}, wantErr: `parse uid claim "oid"`},
		{name: "uid expression", mappings: map[string]any{"uid": map[string]any{"expression": "claims.sub + '-id'"}},
			want: &authn.UserInfo{Name: "oidc:alice", UID: "alice-id"}},
		{name: "uid expression not a string", mappings: map[string]any{"uid": map[string]any{"expression": "claims.n"}},
			claims: map[string]any{"n": 1}, wantErr: "uid claim expression must return a string"},

		// extra
		{name: "extra values", mappings: map[string]any{"extra": []map[string]any{
			{"key": "example.com/team", "valueExpression": "claims.team"},
			{"key": "example.com/roles", "valueExpression": "claims.roles"},
			{"key": "example.com/empty", "valueExpression": "''"},
			{"key": "example.com/none", "valueExpression": "[]"},
			{"key": "example.com/null", "valueExpression": "claims.nothing"},
			{"key": "example.com/const", "valueExpression": "'fixed'"},
		}}, claims: map[string]any{"team": "blue", "roles": []string{"a", "", "b"}, "nothing": jsonNull, "jti": "t-1"},
			want: &authn.UserInfo{Name: "oidc:alice", Extra: map[string][]string{
				"example.com/team":  {"blue"},
				"example.com/roles": {"a", "b"},
				"example.com/const": {"fixed"},
				CredentialIDKey:     {"JTI=t-1"},
			}}},
		{name: "extra value not strings", mappings: map[string]any{"extra": []map[string]any{{"key": "example.com/n", "valueExpression": "claims.n"}}},
			claims: map[string]any{"n": []int{1}}, wantErr: "error evaluating extra claim expression: claims.n: expression must return a string or a list of strings"},

		// claim / requiredValue rules
		{name: "required value matches", rules: []map[string]any{{"claim": "hd", "requiredValue": "example.com"}},
			claims: map[string]any{"hd": "example.com"}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "required value differs", rules: []map[string]any{{"claim": "hd", "requiredValue": "example.com"}},
			claims: map[string]any{"hd": "evil.com"}, wantErr: "required claim hd value does not match. Got = evil.com, want = example.com"},
		{name: "required claim absent", rules: []map[string]any{{"claim": "hd", "requiredValue": "example.com"}},
			wantErr: "required claim hd not present in ID token"},
		{name: "required claim not a string", rules: []map[string]any{{"claim": "hd", "requiredValue": "1"}},
			claims: map[string]any{"hd": 1}, wantErr: "parse claim hd"},
		{name: "required claim without value holds the empty string", rules: []map[string]any{{"claim": "flag"}},
			claims: map[string]any{"flag": ""}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "required claim without value, non-empty", rules: []map[string]any{{"claim": "flag"}},
			claims: map[string]any{"flag": "x"}, wantErr: "required claim flag value does not match"},

		// claim validation expressions
		{name: "claim rules all true", rules: []map[string]any{
			{"expression": "claims.level > 3"}, {"expression": "claims.org.name == 'acme'"},
		}, claims: map[string]any{"level": 5, "org": map[string]any{"name": "acme"}}, want: &authn.UserInfo{Name: "oidc:alice"}},
		{name: "second claim rule false", rules: []map[string]any{
			{"expression": "claims.level > 3", "message": "level too low"}, {"expression": "claims.org.name == 'acme'", "message": "wrong org"},
		}, claims: map[string]any{"level": 5, "org": map[string]any{"name": "other"}}, wantErr: "failed: wrong org"},
		// A search costs in proportion to the text searched, so the limit comes fast in time.
		{name: "claim rule over the cost limit", rules: []map[string]any{
			{"expression": "claims.items.all(x, !claims.big.contains('b'))"},
		}, claims: map[string]any{"items": make([]string, 2000), "big": strings.Repeat("a", 10000)}, wantErr: "cost limit exceeded"},

		// user validation rules, all ANDed, over the mapped user
		{name: "user rules all true", mappings: map[string]any{
			"groups": map[string]any{"claim": "groups", "prefix": ""},
			"uid":    map[string]any{"claim": "sub"},
			"extra":  []map[string]any{{"key": "example.com/team", "valueExpression": "claims.team"}},
		}, userRules: []map[string]any{
			{"expression": "user.groups.exists(g, g == 'admins')"},
			{"expression": "user.extra['example.com/team'] == ['blue'] && user.uid == 'alice' && user.username == 'oidc:alice'"},
		}, claims: map[string]any{"groups": []string{"admins"}, "team": "blue"},
			want: &authn.UserInfo{Name: "oidc:alice", UID: "alice", Groups: []string{"admins"}, Extra: map[string][]string{"example.com/team": {"blue"}}}},
		{name: "second user rule false", userRules: []map[string]any{
			{"expression": "user.username != ''", "message": "no name"},
			{"expression": "size(user.groups) > 0", "message": "groups required"},
		}, wantErr: "oidc: error evaluating user info validation rule: validation expression 'size(user.groups) > 0' failed: groups required"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.jwtConfig()
			mappings := map[string]any{"username": prefixed}
			for k, v := range tt.mappings {
				mappings[k] = v
			}
			c["claimMappings"] = mappings
			if tt.rules != nil {
				c["claimValidationRules"] = tt.rules
			}
			if tt.userRules != nil {
				c["userValidationRules"] = tt.userRules
			}
			sub := &env{t: t, p: e.p, clk: e.clk}
			a := sub.start(c)
			token := sub.token(tt.claims)
			if tt.wantErr != "" {
				expectRejected(t, a, token, tt.wantErr)
				return
			}
			user := expectUser(t, a, token)
			if !reflect.DeepEqual(user, tt.want) {
				t.Fatalf("user = %+v, want %+v", user, tt.want)
			}
		})
	}
}
