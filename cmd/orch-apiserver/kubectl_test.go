package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orch.io/orch/components/authn/jwt/jwttest"
)

// kubectl is Kubernetes' kubectl built from third_party/kubectl, once per test binary, beside the
// server's binary so TestMain removes both (a 100 MB build left behind by every run filled /tmp).
var kubectl = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(binary), "kubectl")
	build := exec.Command(goTool(), "build", "-o", bin,
		"-ldflags", "-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37", ".")
	build.Dir = filepath.Join("..", "..", "third_party", "kubectl")
	if out, err := build.CombinedOutput(); err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

const kubectlEvent = `apiVersion: events.orch.io/v1
kind: Event
metadata: {name: web-0.pulled, namespace: default, labels: {app: web}}
eventTime: "2026-11-21T23:03:57.523342Z"
reportingController: orch.io/orchlet
reportingInstance: node-1
action: Pulling
reason: Pulled
type: Normal
regarding: {kind: Pod, namespace: default, name: web-0}
note: Successfully pulled image busybox
`

// kubectl works against orch-apiserver with no flag it would not need against Kubernetes: create
// with its validation on (which needs the OpenAPI documents), get in every output, describe,
// explain, label, annotate, patch, client-side apply, watch and delete.
func TestKubectl(t *testing.T) {
	bin, err := kubectl()
	if err != nil {
		t.Fatalf("building kubectl: %v", err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token,admin,1,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	p := startBinary(t, dataDir, "--token-auth-file", tokens)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: "`+p.url+`", certificate-authority: "`+filepath.Join(dataDir, "pki", "apiserver.crt")+`"}}]
users: [{name: admin, user: {token: admin-token}}]
contexts: [{name: orch, context: {cluster: orch, user: admin}}]
current-context: orch
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"event.yaml":       kubectlEvent,
		"bad.yaml":         strings.Replace(kubectlEvent, "reason: Pulled", "reason: Pulled\nbogus: 1", 1),
		"other.yaml":       strings.Replace(kubectlEvent, "web-0.pulled", "web-1.pulled", 1),
		"pod.yaml":         "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers: [{name: app, image: nginx:1.27}]\n",
		"node.yaml":        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {node-role.orch.io/worker: \"\"}}\n",
		"ns.yaml":          "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n",
		"ssa.yaml":         strings.Replace(kubectlEvent, "web-0.pulled", "web-2.pulled", 1),
		"ssa-changed.yaml": strings.Replace(strings.Replace(kubectlEvent, "web-0.pulled", "web-2.pulled", 1), "app: web", "app: api", 1),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const ev = "events.events.orch.io"
	for _, step := range []struct {
		args []string
		want []string
		fail bool
	}{
		{args: []string{"create", "-f", "event.yaml"}, want: []string{"event.events.orch.io/web-0.pulled created"}},
		{args: []string{"create", "-f", "bad.yaml"}, want: []string{`unknown field "bogus"`}, fail: true},
		{args: []string{"get", ev}, want: []string{"LAST SEEN", "Pulled", "pod/web-0", "Successfully pulled image busybox"}},
		{args: []string{"get", ev, "-o", "wide"}, want: []string{"SOURCE", "FIRST SEEN", "orch.io/orchlet, node-1"}},
		{args: []string{"get", ev, "web-0.pulled", "-o", "yaml"}, want: []string{"reportingController: orch.io/orchlet", "resourceVersion:"}},
		{args: []string{"describe", ev, "web-0.pulled"}, want: []string{"web-0.pulled", "Reporting Controller:", "orch.io/orchlet"}},
		// explain's RESOURCE.FIELD names core v1's events first, as beside kube-apiserver.
		{args: []string{"explain", "events.series", "--api-version=events.orch.io/v1"}, want: []string{"GROUP:      events.orch.io", "KIND:       Event", "FIELD: series <EventSeries>", "lastObservedTime"}},
		{args: []string{"explain", "events.involvedObject"}, want: []string{"KIND:       Event", "VERSION:    v1", "FIELD: involvedObject <ObjectReference>"}},
		{args: []string{"label", ev, "web-0.pulled", "tier=frontend"}, want: []string{"labeled"}},
		{args: []string{"annotate", ev, "web-0.pulled", "owner=team-a"}, want: []string{"annotated"}},
		{args: []string{"patch", ev, "web-0.pulled", "--type=merge", "-p", `{"series":{"count":2,"lastObservedTime":"2026-11-21T23:05:00.000000Z"}}`}, want: []string{"patched"}},
		{args: []string{"get", ev, "web-0.pulled", "-o", "jsonpath={.series.count} {.metadata.labels.tier} {.metadata.annotations.owner}"}, want: []string{"2 frontend team-a"}},
		{args: []string{"apply", "-f", "event.yaml"}, want: []string{"event.events.orch.io/web-0.pulled configured"}},
		{args: []string{"get", ev, "web-0.pulled", "-o", "jsonpath={.metadata.annotations}"}, want: []string{"kubectl.kubernetes.io/last-applied-configuration"}},
		// Server-side apply: the fields' owners are recorded, and another manager is refused
		// a field it does not own until it forces.
		{args: []string{"apply", "--server-side", "-f", "ssa.yaml"}, want: []string{"event.events.orch.io/web-2.pulled serverside-applied"}},
		{args: []string{"get", ev, "web-2.pulled", "--show-managed-fields", "-o", "yaml"}, want: []string{"manager: kubectl", "operation: Apply", "f:note: {}"}},
		{args: []string{"apply", "--server-side", "--field-manager", "other", "-f", "ssa-changed.yaml"}, want: []string{`conflict with "kubectl"`, ".metadata.labels.app"}, fail: true},
		{args: []string{"apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "ssa-changed.yaml"}, want: []string{"serverside-applied"}},
		{args: []string{"get", ev, "web-2.pulled", "-o", "jsonpath={.metadata.labels.app}"}, want: []string{"api"}},
		{args: []string{"delete", ev, "web-2.pulled"}, want: []string{"deleted"}},
		// The core resources and leases, as a Kubernetes user drives them.
		{args: []string{"get", "namespaces"}, want: []string{"NAME", "STATUS", "default", "Active", "orch-node-lease"}},
		{args: []string{"apply", "-f", "ns.yaml"}, want: []string{"namespace/team-a created"}},
		{args: []string{"apply", "-f", "node.yaml"}, want: []string{"node/node-1 created"}},
		{args: []string{"get", "nodes"}, want: []string{"node-1", "Unknown", "worker"}},
		{args: []string{"apply", "-f", "pod.yaml"}, want: []string{"pod/web created"}},
		{args: []string{"get", "pods", "-o", "wide"}, want: []string{"web", "0/1", "Pending", "<none>"}},
		{args: []string{"explain", "pods.spec.containers.image"}, want: []string{"KIND:       Pod", "FIELD: image <string>"}},
		{args: []string{"label", "pod", "web", "tier=frontend"}, want: []string{"pod/web labeled"}},
		{args: []string{"get", "pods", "-l", "tier=frontend", "--field-selector", "status.phase=Pending", "-o", "name"}, want: []string{"pod/web"}},
		{args: []string{"patch", "pod", "web", "-p", `{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}`}, want: []string{"pod/web patched"}},
		{args: []string{"patch", "pod", "web", "-p", `{"spec":{"containers":[{"name":"app","command":["sh"]}]}}`}, want: []string{"pod updates may not change fields other than"}, fail: true},
		{args: []string{"get", "leases", "-A"}, want: []string{"No resources found"}},
		{args: []string{"get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.status.qosClass}"}, want: []string{"nginx:1.28 BestEffort"}},
		// kubectl debug's patch of pods/ephemeralcontainers adds a container, validated.
		{args: []string{"debug", "web", "--image=busybox:1.36", "--target=app", "-c", "debugger"}, want: []string{`Targeting container "app"`}},
		{args: []string{"debug", "web", "--image=busybox:1.36", "-c", "app"}, want: []string{`spec.ephemeralContainers[1].name: Duplicate value: "app"`}, fail: true},
		{args: []string{"get", "pod", "web", "-o", "jsonpath={.spec.ephemeralContainers[0].name} {.spec.ephemeralContainers[0].targetContainerName}"}, want: []string{"debugger app"}},
		{args: []string{"delete", "pod", "web"}, want: []string{`pod "web" deleted`}},
		{args: []string{"delete", "namespace", "team-a"}, want: []string{`namespace "team-a" deleted`}},
	} {
		out, err := run(step.args...)
		if (err != nil) != step.fail {
			t.Fatalf("kubectl %s: err %v, want failure %v:\n%s", strings.Join(step.args, " "), err, step.fail, out)
		}
		for _, w := range step.want {
			if !strings.Contains(out, w) {
				t.Fatalf("kubectl %s lacks %q:\n%s", strings.Join(step.args, " "), w, out)
			}
		}
	}

	out, err := run("get", ev, "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 1 || list.Items[0].Metadata.Name != "web-0.pulled" {
		t.Fatalf("get -o json: %v\n%s", err, out)
	}

	watch := exec.Command(bin, "--kubeconfig", kubeconfig, "get", ev, "--watch-only", "-o", "name")
	var watched bytes.Buffer
	var mu sync.Mutex
	watch.Stdout = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return watched.Write(b) })
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Created until the watch has shown it: the watch may start after the first create.
		if _, err := run("apply", "-f", "other.yaml"); err != nil {
			t.Fatal(err)
		}
		if _, err := run("annotate", "--overwrite", ev, "web-1.pulled", "seen="+time.Now().Format("150405.000")); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := watched.String()
		mu.Unlock()
		if strings.Contains(got, "event.events.orch.io/web-1.pulled") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("get --watch-only showed %q", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	if out, err := run("delete", "-f", "event.yaml", "-f", "other.yaml"); err != nil || !strings.Contains(out, `"web-0.pulled" deleted`) {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	if out, _ := run("get", ev); !strings.Contains(out, "No resources found") {
		t.Fatalf("after delete: %s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Kubernetes' kubectl with a JWT of an OIDC provider named in --authentication-config works
// against the Event API; a token for another audience is Unauthorized.
func TestKubectlWithAnOIDCToken(t *testing.T) {
	bin, err := kubectl()
	if err != nil {
		t.Fatalf("building kubectl: %v", err)
	}
	provider := jwttest.NewProvider(t)
	dir := t.TempDir()
	authConfig := filepath.Join(dir, "authentication.yaml")
	if err := os.WriteFile(authConfig, []byte(fmt.Sprintf(`apiVersion: apiserver.config.orch.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [orch]
    certificateAuthority: %q
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
`, provider.URL, string(provider.CAPEM))), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	p := startBinary(t, dataDir, "--authentication-config", authConfig, "--authorization-mode", "AlwaysAllow")
	run := func(token string, args ...string) (string, error) {
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: "`+p.url+`", certificate-authority: "`+filepath.Join(dataDir, "pki", "apiserver.crt")+`"}}]
users: [{name: oidc, user: {token: "`+token+`"}}]
contexts: [{name: orch, context: {cluster: orch, user: oidc}}]
current-context: orch
`), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	exp := time.Now().Add(time.Hour).Unix()
	good := provider.Token(t, map[string]any{"iss": provider.URL, "aud": "orch", "sub": "dana", "exp": exp})
	// The issuer is discovered in the background once the server is up.
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if out, err = run(good, "get", "events.events.orch.io", "-A"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !strings.Contains(out, "No resources found") {
		t.Fatalf("kubectl get events with the token: %v\n%s", err, out)
	}
	bad := provider.Token(t, map[string]any{"iss": provider.URL, "aud": "elsewhere", "sub": "dana", "exp": exp})
	if out, err := run(bad, "get", "events.events.orch.io", "-A"); err == nil || !strings.Contains(out, "You must be logged in to the server") {
		t.Fatalf("kubectl with a token for another audience: %v\n%s", err, out)
	}
}
