package authz

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/authn"
)

func user(name string) *authn.UserInfo { return &authn.UserInfo{Name: name} }

// TestForbiddenMessageReference checks the text against Status bodies recorded from a Kubernetes
// API server (testdata/*.json, copied from the shared reference).
func TestForbiddenMessageReference(t *testing.T) {
	tests := []struct {
		file string
		user string
	}{
		{"09-403-anonymous.json", "system:anonymous"},
		{"10-403-forbidden-user.json", "peer-user"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var status struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(raw, &status); err != nil {
				t.Fatal(err)
			}
			got := ForbiddenMessage(Attributes{
				User: user(tt.user), Verb: "list", Namespace: "default",
				APIGroup: "events.k8s.io", APIVersion: "v1", Resource: "events",
				Path: "/apis/events.k8s.io/v1/namespaces/default/events", ResourceRequest: true,
			}, "")
			if got != status.Message {
				t.Errorf("ForbiddenMessage =\n  %s\nwant\n  %s", got, status.Message)
			}
		})
	}
}

func TestForbiddenMessage(t *testing.T) {
	events := Attributes{
		User: user("system:anonymous"), Verb: "list", Namespace: "default",
		APIGroup: "events.orch.io", APIVersion: "v1", Resource: "events", ResourceRequest: true,
	}
	with := func(a Attributes, f func(*Attributes)) Attributes { f(&a); return a }
	tests := []struct {
		name   string
		attrs  Attributes
		reason string
		want   string
	}{
		{
			name:  "namespaced collection",
			attrs: events,
			want:  `events.events.orch.io is forbidden: User "system:anonymous" cannot list resource "events" in API group "events.orch.io" in the namespace "default"`,
		},
		{
			name:   "with a reason",
			attrs:  events,
			reason: "Everything is forbidden.",
			want:   `events.events.orch.io is forbidden: User "system:anonymous" cannot list resource "events" in API group "events.orch.io" in the namespace "default": Everything is forbidden.`,
		},
		{
			name:  "named resource",
			attrs: with(events, func(a *Attributes) { a.User, a.Verb, a.Name = user("alice"), "get", "e1" }),
			want:  `events.events.orch.io "e1" is forbidden: User "alice" cannot get resource "events" in API group "events.orch.io" in the namespace "default"`,
		},
		{
			name:  "cluster scope",
			attrs: with(events, func(a *Attributes) { a.Namespace, a.Verb = "", "watch" }),
			want:  `events.events.orch.io is forbidden: User "system:anonymous" cannot watch resource "events" in API group "events.orch.io" at the cluster scope`,
		},
		{
			name: "core group, cluster-scoped, named",
			attrs: Attributes{User: user("alice"), Verb: "get", APIVersion: "v1", Resource: "nodes",
				Name: "node-1", ResourceRequest: true},
			want: `nodes "node-1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope`,
		},
		{
			name: "subresource",
			attrs: Attributes{User: user("alice"), Verb: "get", Namespace: "default", APIVersion: "v1",
				Resource: "pods", Subresource: "log", Name: "p", ResourceRequest: true},
			want: `pods "p" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default"`,
		},
		{
			name:  "non-resource URL",
			attrs: Attributes{User: user("x"), Verb: "get", Path: "/foo"},
			want:  `forbidden: User "x" cannot get path "/foo"`,
		},
		{
			name:   "non-resource URL with a reason",
			attrs:  Attributes{User: user("x"), Verb: "post", Path: "/healthz"},
			reason: "no",
			want:   `forbidden: User "x" cannot post path "/healthz": no`,
		},
		{
			name:  "no user",
			attrs: Attributes{Verb: "get", Path: "/version"},
			want:  `forbidden: User "" cannot get path "/version"`,
		},
		{
			name:   "HTML escaped in the request part, not in the reason",
			attrs:  Attributes{User: user("<b>&"), Verb: "get", Path: "/a<b>"},
			reason: "<i>",
			want:   `forbidden: User "&lt;b&gt;&amp;" cannot get path "/a&lt;b&gt;": <i>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ForbiddenMessage(tt.attrs, tt.reason); got != tt.want {
				t.Errorf("ForbiddenMessage =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestAlways(t *testing.T) {
	ctx := context.Background()
	a := Attributes{User: user("alice"), Verb: "get", Path: "/"}
	if d, reason, err := AlwaysAllow().Authorize(ctx, a); d != DecisionAllow || reason != "" || err != nil {
		t.Errorf("AlwaysAllow = %v, %q, %v", d, reason, err)
	}
	if d, reason, err := AlwaysDeny().Authorize(ctx, a); d != DecisionDeny || reason != "Everything is forbidden." || err != nil {
		t.Errorf("AlwaysDeny = %v, %q, %v", d, reason, err)
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[Decision]string{DecisionDeny: "Deny", DecisionAllow: "Allow",
		DecisionNoOpinion: "NoOpinion", Decision(7): "Decision(7)"} {
		if d.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(d), d.String(), want)
		}
	}
}

func TestNew(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		mode       string
		want       Decision
		wantReason string
		wantErr    []string
		noPods     bool
		noRBAC     bool
	}{
		{mode: "AlwaysAllow", want: DecisionAllow},
		{mode: "AlwaysAllow", want: DecisionAllow, noPods: true},
		{mode: "Node", want: DecisionNoOpinion},
		{mode: "Node,AlwaysDeny", want: DecisionDeny, wantReason: AlwaysDenyReason},
		{mode: "Node", noPods: true, wantErr: []string{"mode Node needs the API server's pods"}},
		{mode: "AlwaysDeny", want: DecisionDeny, wantReason: AlwaysDenyReason},
		{mode: "Node,RBAC", want: DecisionAllow, wantReason: "rbac says yes"},
		{mode: "RBAC", noRBAC: true, wantErr: []string{"mode RBAC needs the API server's roles and bindings"}},
		{mode: "AlwaysAllow", noRBAC: true, want: DecisionAllow},
		{mode: "AlwaysAllow,AlwaysDeny", want: DecisionAllow},
		{mode: "AlwaysDeny, AlwaysAllow", want: DecisionDeny, wantReason: AlwaysDenyReason},
		{mode: "", wantErr: []string{"--authorization-mode", "AlwaysAllow, AlwaysDeny, Node, RBAC"}},
		{mode: "alwaysallow", wantErr: []string{"--authorization-mode", `"alwaysallow"`, "AlwaysAllow, AlwaysDeny"}},
		{mode: "Webhook", wantErr: []string{"--authorization-mode", `"Webhook"`, "AlwaysAllow, AlwaysDeny"}},
		{mode: "AlwaysAllow,", wantErr: []string{"--authorization-mode", `""`}},
		{mode: "AlwaysAllow,AlwaysAllow", wantErr: []string{"--authorization-mode", `"AlwaysAllow"`, "more than once"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			pods := PodGetter(func(context.Context, string, string) (*corev1.Pod, error) { return nil, errors.New("unused") })
			if tt.noPods {
				pods = nil
			}
			var rbac Authorizer = AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
				return DecisionAllow, "rbac says yes", nil
			})
			if tt.noRBAC {
				rbac = nil
			}
			az, err := New(tt.mode, pods, nil, rbac)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("New(%q) succeeded, want an error", tt.mode)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.mode, err)
			}
			d, reason, err := az.Authorize(ctx, Attributes{Verb: "get", Path: "/"})
			if d != tt.want || reason != tt.wantReason || err != nil {
				t.Errorf("Authorize = %v, %q, %v; want %v, %q", d, reason, err, tt.want, tt.wantReason)
			}
		})
	}
	names := ModeNames()
	names[0] = "changed"
	if ModeNames()[0] != ModeAlwaysAllow {
		t.Error("ModeNames shares its slice with callers")
	}
}

func TestUnion(t *testing.T) {
	ctx := context.Background()
	errX := errors.New("webhook unreachable")
	answer := func(d Decision, reason string, err error, hits *int) Authorizer {
		return AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
			*hits++
			return d, reason, err
		})
	}
	tests := []struct {
		name       string
		answers    [][3]any // decision, reason, error
		want       Decision
		wantReason string
		wantErr    error
		wantHits   int
	}{
		{"allow stops", [][3]any{{DecisionAllow, "ok", nil}, {DecisionDeny, "", nil}}, DecisionAllow, "ok", nil, 1},
		{"deny stops", [][3]any{{DecisionDeny, "no", nil}, {DecisionAllow, "", nil}}, DecisionDeny, "no", nil, 1},
		{"no opinion passes on", [][3]any{{DecisionNoOpinion, "a", errX}, {DecisionAllow, "", nil}}, DecisionAllow, "", nil, 2},
		{"all no opinion", [][3]any{{DecisionNoOpinion, "a", errX}, {DecisionNoOpinion, "", nil}, {DecisionNoOpinion, "c", nil}},
			DecisionNoOpinion, "a\nc", errX, 3},
		{"empty", nil, DecisionNoOpinion, "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := 0
			var list []Authorizer
			for _, a := range tt.answers {
				err, _ := a[2].(error)
				list = append(list, answer(a[0].(Decision), a[1].(string), err, &hits))
			}
			list = append(list, nil)
			d, reason, err := Union(list...).Authorize(ctx, Attributes{})
			if d != tt.want || reason != tt.wantReason || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Union = %v, %q, %v; want %v, %q, %v", d, reason, err, tt.want, tt.wantReason, tt.wantErr)
			}
			if hits != tt.wantHits {
				t.Errorf("asked %d authorizers, want %d", hits, tt.wantHits)
			}
		})
	}
}
