package main

// Where the agent mode's pods come from: static manifests in a directory orchlet watches, or
// orch-apiserver (--api-mode), where they are created bound to the agent's node and deleted
// through the API, and where their statuses are judged too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/fakecri"
)

// podSource makes and deletes the campaign's pods, and judges what the agent reported of them.
type podSource interface {
	// args are orchlet's flags that point it at the source.
	args() []string
	// add makes the pods named, remove deletes them; both may still be at work when the agent
	// is killed (the caller waits for them after the restart).
	add(ctx context.Context, names []string) error
	remove(ctx context.Context, names []string) error
	// judge compares what the source shows of the node's pods with those that should run;
	// unstarted are the UIDs of pods a kill found with a container created and not started.
	judge(ctx context.Context, present, unstarted map[string]bool) (apiDifference, error)
	stop()
}

// apiName is a campaign pod's name on the runtime and in the API: static pods are named
// <pod>-<node>, and the API's pods are given the same names, so the runtime's filter and the
// judges serve both sources.
func apiName(pod string) string { return pod + "-" + agentNode }

// staticSource is a static pod directory.
type staticSource struct {
	manifests, staging, image string
}

func newStaticSource(dir, image string) (*staticSource, error) {
	s := &staticSource{manifests: filepath.Join(dir, "manifests"), staging: filepath.Join(dir, "staging"), image: image}
	for _, d := range []string{s.manifests, s.staging} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *staticSource) args() []string {
	return []string{"--pod-manifest-path=" + s.manifests, "--file-check-frequency=20s"} // a fallback: the directory is watched with inotify
}

func (s *staticSource) add(_ context.Context, names []string) error {
	return placeManifests(s.staging, s.manifests, names, s.image)
}

func (s *staticSource) remove(_ context.Context, names []string) error {
	for _, n := range names {
		if err := os.Remove(filepath.Join(s.manifests, n+".yaml")); err != nil {
			return err
		}
	}
	return nil
}

// judge has nothing to add for static pods: the agent reports them to no API server.
func (s *staticSource) judge(context.Context, map[string]bool, map[string]bool) (apiDifference, error) {
	return apiDifference{}, nil
}

func (s *staticSource) stop() {}

// apiSource is orch-apiserver on its embedded etcd, a child process under the campaign's data
// directory, left running through the agent's kills.
type apiSource struct {
	srv        *server
	kubeconfig string
	image      string
}

const podsPath = "/api/v1/namespaces/default/pods"

func newAPISource(ctx context.Context, bin, dir, image string) (*apiSource, error) {
	dataDir := filepath.Join(dir, "apiserver")
	srv, err := startServer(ctx, bin, dataDir)
	if err != nil {
		return nil, err
	}
	// The server's defaults: anonymous requests, every one allowed. The agent's kubeconfig
	// trusts the server's self-signed certificate and names no credentials.
	kubeconfig := filepath.Join(dir, "orchlet.conf")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: orchlet, user: {}}]
contexts: [{name: orch, context: {cluster: orch, user: orchlet}}]
current-context: orch
`, srv.url, filepath.Join(dataDir, "pki", "apiserver.crt"))), 0o600); err != nil {
		srv.kill()
		return nil, err
	}
	return &apiSource{srv: srv, kubeconfig: kubeconfig, image: image}, nil
}

func (s *apiSource) args() []string {
	return []string{"--orchconfig=" + s.kubeconfig, "--node-ip=127.0.0.1"}
}

func (s *apiSource) stop() { s.srv.kill() }

// add creates the pods bound to the agent's node (spec.nodeName, as a DaemonSet's controller binds
// them), 8 at a time, each retried while the server answers 5xx or the namespace's default service
// account is not made yet.
func (s *apiSource) add(ctx context.Context, names []string) error {
	return s.each(names, func(n string) error {
		pod := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: apiName(n), Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName: agentNode, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](2),
				AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "sleeper", Image: s.image, ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sleep", "3600"}}},
			},
		}
		body, _ := json.Marshal(pod)
		return s.retry(ctx, http.MethodPost, podsPath, body, http.StatusCreated)
	})
}

// remove deletes the pods with their grace period, as kubectl delete does: the agent stops them and
// confirms, and only then are they gone from the API.
func (s *apiSource) remove(ctx context.Context, names []string) error {
	return s.each(names, func(n string) error {
		return s.retry(ctx, http.MethodDelete, podsPath+"/"+apiName(n), nil, http.StatusOK)
	})
}

func (s *apiSource) each(names []string, do func(string) error) error {
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				errs <- do(n)
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *apiSource) retry(ctx context.Context, method, path string, body []byte, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, method, s.srv.url+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.srv.client.Do(req)
		var answer []byte
		if err == nil {
			answer, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, answer)
			// A 5xx, or the default service account not made yet (403 from its admission), is
			// tried again; any other answer is the campaign's failure.
			if resp.StatusCode < 500 && !(resp.StatusCode == http.StatusForbidden && bytes.Contains(answer, []byte("serviceaccount"))) {
				return err
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// judge lists the node's pods through the API.
func (s *apiSource) judge(ctx context.Context, present, unstarted map[string]bool) (apiDifference, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.url+podsPath+"?fieldSelector=spec.nodeName%3D"+agentNode, nil)
	if err != nil {
		return apiDifference{}, err
	}
	resp, err := s.srv.client.Do(req)
	if err != nil {
		return apiDifference{}, fmt.Errorf("listing the node's pods: %w", err)
	}
	defer resp.Body.Close()
	var list corev1.PodList
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return apiDifference{}, fmt.Errorf("listing the node's pods: %d %s", resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return apiDifference{}, fmt.Errorf("listing the node's pods: %w", err)
	}
	want := map[string]bool{}
	for n := range present {
		want[apiName(n)] = true
	}
	return judgeAPIPods(list.Items, want, unstarted), nil
}

// apiDifference is what the API shows unconverged: a pod that should run and is not Running and
// Ready there (or is not there), a deleted pod still there; and a pod whose containers were
// restarted, which a kill alone must never do (the pods' containers run until deleted). One
// restart is told apart: of a container a kill found created and not yet started, which the
// restarted agent makes anew as its next attempt, as the kubelet does (ShouldContainerBeRestarted
// restarts a created container; startContainer counts the one before it), so its count is 1.
type apiDifference struct {
	NotReady, Lingering, Restarted []string
	// RestartedUnstarted are restart counts of 1 of pods whose container was created and not
	// started when a kill came.
	RestartedUnstarted []string
}

// Converged is the API's half of convergence: restarts are counted, not waited on (a restart count
// never comes down).
func (d apiDifference) Converged() bool { return len(d.NotReady)+len(d.Lingering) == 0 }

// judgeAPIPods judges the node's pods as the API reports them against the names that should run;
// unstarted are the UIDs of pods a kill found with a container created and not started.
func judgeAPIPods(pods []corev1.Pod, want, unstarted map[string]bool) apiDifference {
	var d apiDifference
	seen := map[string]bool{}
	for _, p := range pods {
		seen[p.Name] = true
		if !want[p.Name] {
			d.Lingering = append(d.Lingering, fmt.Sprintf("%s: deleted, still in the API (%s)", p.Name, p.Status.Phase))
			continue
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if p.Status.Phase != corev1.PodRunning || !ready || p.DeletionTimestamp != nil {
			d.NotReady = append(d.NotReady, fmt.Sprintf("%s: %s, ready %v", p.Name, p.Status.Phase, ready))
		}
		for _, c := range p.Status.ContainerStatuses {
			restart := fmt.Sprintf("%s/%s (%s): restart count %d", p.Name, c.Name, p.UID, c.RestartCount)
			switch {
			case c.RestartCount == 1 && unstarted[string(p.UID)]:
				d.RestartedUnstarted = append(d.RestartedUnstarted, restart)
			case c.RestartCount > 0:
				d.Restarted = append(d.Restarted, restart)
			}
		}
	}
	for n := range want {
		if !seen[n] {
			d.NotReady = append(d.NotReady, n+": not in the API")
		}
	}
	slices.Sort(d.NotReady)
	slices.Sort(d.Lingering)
	slices.Sort(d.Restarted)
	slices.Sort(d.RestartedUnstarted)
	return d
}

// createdNotStarted are the UIDs of the pods with a container created and not running in their
// ready sandbox, none of its name running there: a kill that came between its CreateContainer
// and its StartContainer.
func createdNotStarted(st fakecri.State) map[string]bool {
	uid := map[string]string{} // ready sandbox to its pod's UID
	for _, sb := range st.Sandboxes {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY.String() {
			uid[sb.ID] = sb.UID
		}
	}
	running := map[string]bool{}
	for _, c := range st.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING.String() {
			running[c.SandboxID+"/"+c.Name] = true
		}
	}
	out := map[string]bool{}
	for _, c := range st.Containers {
		if u, ok := uid[c.SandboxID]; ok && c.State == runtimeapi.ContainerState_CONTAINER_CREATED.String() && !running[c.SandboxID+"/"+c.Name] {
			out[u] = true
		}
	}
	return out
}
