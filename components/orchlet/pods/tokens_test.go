package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/sources"
)

// fakeTokens issues tokens tok-1, tok-2, ... expiring expirationSeconds from the clock's now,
// recording what was asked.
type fakeTokens struct {
	clock clock.Clock
	mu    sync.Mutex
	asked []string
	fail  error
}

func (f *fakeTokens) CreateToken(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := tr.Spec.BoundObjectRef
	f.asked = append(f.asked, fmt.Sprintf("%s/%s aud=%v exp=%d bound=%s/%s/%s/%s", namespace, name, tr.Spec.Audiences, *tr.Spec.ExpirationSeconds, ref.APIVersion, ref.Kind, ref.Name, ref.UID))
	if f.fail != nil {
		return nil, f.fail
	}
	out := tr.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("tok-%d", len(f.asked)),
		ExpirationTimestamp: metav1.NewTime(f.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
	return out, nil
}

func (f *fakeTokens) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func tokenHarness(t *testing.T) (*harness, *fakeTokens) {
	h := newHarness(t, nil, config(nil), nil)
	h.m.SetObjects(&fakeObjects{})
	tokens := &fakeTokens{clock: h.mock}
	h.m.SetTokens(tokens)
	h.m.tokens.jitter = func() float64 { return 0 }
	return h, tokens
}

func tokenVolume(sources ...corev1.ServiceAccountTokenProjection) corev1.Volume {
	v := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
	for i := range sources {
		v.Projected.Sources = append(v.Projected.Sources, corev1.VolumeProjection{ServiceAccountToken: &sources[i]})
	}
	return v
}

func (h *harness) tokenFile(name string) (string, os.FileInfo) {
	h.t.Helper()
	path := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes", projectedPlugin, "v", name)
	data, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v; events %v", err, h.rec.lines())
	}
	info, err := os.Stat(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(data), info
}

// A serviceAccountToken projection is a token bound to the pod, for its audience (the API's when
// it names none), of its lifetime (an hour by default), for the pod's service account ("default"
// when it names none), with the volume's mode.
func TestTokenVolume(t *testing.T) {
	h, tokens := tokenHarness(t)
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(
		corev1.ServiceAccountTokenProjection{Path: "token"},
		corev1.ServiceAccountTokenProjection{Path: "vault/token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)},
	)}
	pod.Spec.Volumes[0].Projected.DefaultMode = ptr.To[int32](0o640)
	h.add(pod)
	h.runUntil(time.Second)
	want := []string{
		"default/default aud=[] exp=3600 bound=v1/Pod/p/uid-p",
		"default/default aud=[vault] exp=600 bound=v1/Pod/p/uid-p",
	}
	if got := tokens.requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for file, token := range map[string]string{"token": "tok-1", "vault/token": "tok-2"} {
		if data, info := h.tokenFile(file); data != token || info.Mode().Perm() != 0o640 {
			t.Errorf("%s: %q %v, want %q 0640", file, data, info.Mode().Perm(), token)
		}
	}
	if len(h.calls("RunPodSandbox", "")) != 1 {
		t.Errorf("the pod did not start: %v", h.rec.lines())
	}
}

// Tokens are renewed as the kubelet's token manager renews them, on the agent's clock: past 80%
// of their life (the sync after), not before; a token of the pod's named service account.
func TestTokenRefresh(t *testing.T) {
	h, tokens := tokenHarness(t)
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.ServiceAccountName = "builder"
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](600)})}
	h.add(pod)
	h.runUntil(time.Second)
	sync := config(nil).SyncFrequency.Duration
	if data, _ := h.tokenFile("token"); data != "tok-1" {
		t.Fatalf("token %q", data)
	}
	// 80% of 600s is 480s: the syncs before keep the token.
	h.runUntil(480 * time.Second)
	if data, _ := h.tokenFile("token"); data != "tok-1" || len(tokens.requests()) != 1 {
		t.Fatalf("before 80%% of its life: %q, %d requests", data, len(tokens.requests()))
	}
	h.runUntil(480*time.Second + sync + time.Second)
	if data, _ := h.tokenFile("token"); data != "tok-2" {
		t.Fatalf("after 80%% of its life: %q, requests %v", data, tokens.requests())
	}
	if got := tokens.requests()[1]; !strings.HasPrefix(got, "default/builder ") {
		t.Errorf("request %q, want builder's", got)
	}
	// A failed renewal keeps the token while it lives, and says so only once it has expired.
	tokens.mu.Lock()
	tokens.fail = errors.New("the API is away")
	tokens.mu.Unlock()
	h.runUntil(480*time.Second + 480*time.Second + sync)
	if data, _ := h.tokenFile("token"); data != "tok-2" || len(h.rec.reasons(ReasonFailedMount)) != 0 {
		t.Fatalf("a failed renewal: %q, events %v", data, h.rec.lines())
	}
	h.runUntil(480*time.Second + 600*time.Second + 2*sync)
	evs := h.rec.reasons(ReasonFailedMount)
	if len(evs) == 0 || evs[0].note != `MountVolume.SetUp failed for volume "v" : the API is away` {
		t.Errorf("events %v", h.rec.lines())
	}
}

// When one user runs every container, the token file is theirs and 0600, as the kubelet makes it;
// with an fsGroup it is 0600 before the group may read it (0640).
func TestTokenFileOwner(t *testing.T) {
	user, group := int64(1234), int64(2000)
	if os.Geteuid() != 0 {
		user, group = int64(os.Getuid()), int64(os.Getgid()) // only root may give files away
	}
	self := uint32(os.Getuid())
	for _, tc := range []struct {
		name  string
		edit  func(*corev1.Pod)
		uid   uint32
		mode  os.FileMode
		group int64
	}{
		{"no user", func(*corev1.Pod) {}, self, 0o644, -1},
		{"one user", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(user)} }, uint32(user), 0o600, -1},
		{"two users", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(user)}
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(user + 1)}
		}, self, 0o644, -1},
		{"fsGroup", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To(group)} }, self, 0o640, group},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := tokenHarness(t)
			pod := newPod("p", ctr("a", "i"), ctr("b", "i"))
			pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token"})}
			tc.edit(pod)
			h.add(pod)
			h.runUntil(time.Second)
			_, info := h.tokenFile("token")
			st := info.Sys().(*syscall.Stat_t)
			if st.Uid != tc.uid || info.Mode().Perm() != tc.mode || (tc.group >= 0 && int64(st.Gid) != tc.group) {
				t.Errorf("owner %d:%d mode %v, want %d mode %v", st.Uid, st.Gid, info.Mode().Perm(), tc.uid, tc.mode)
			}
		})
	}
}

// Static pods refer to no service account, by spec.serviceAccountName, its deprecated name or a
// token projection (PreventStaticPodAPIReferences).
func TestStaticPodsRefuseServiceAccounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod)
	}{
		{"serviceAccountName", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "x" }},
		{"serviceAccount", func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "x" }},
		{"token projection", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "t"})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, tokens := tokenHarness(t)
			pod := newPod("p", ctr("c", "i"))
			pod.Annotations = map[string]string{sources.ConfigSourceAnnotation: "file"}
			tc.edit(pod)
			h.add(pod)
			h.runUntil(time.Second)
			if st := h.pod("p").Status; st.Reason != ReasonUnsupportedPodSpec || st.Message != "static pods may not reference serviceaccounts" {
				t.Errorf("status %s %q", st.Reason, st.Message)
			}
			if len(tokens.requests()) != 0 {
				t.Errorf("tokens asked for a static pod: %v", tokens.requests())
			}
		})
	}
}

// The kubelet's refresh rule: past 80% of the token's life or 24h after it was issued, whichever
// comes first, each less the jitter (up to 10s).
func TestTokenRequiresRefresh(t *testing.T) {
	for _, tc := range []struct {
		name   string
		life   time.Duration
		age    time.Duration
		jitter float64
		want   bool
	}{
		{"an hour's token at 47m", time.Hour, 47 * time.Minute, 0, false},
		{"an hour's token at 48m", time.Hour, 48*time.Minute + time.Second, 0, true},
		{"an hour's token at 47m55s, 9s of jitter", time.Hour, 47*time.Minute + 55*time.Second, 0.99, true},
		{"two days' token at 23h59m", 48 * time.Hour, 23*time.Hour + 59*time.Minute, 0, false},
		{"two days' token after 24h", 48 * time.Hour, 24*time.Hour + time.Second, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			issued := clk.Now()
			clk.Add(tc.age)
			tm := &tokenManager{clock: clk, jitter: func() float64 { return tc.jitter }}
			secs := int64(tc.life / time.Second)
			tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
				Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(issued.Add(tc.life))}}
			if got := tm.requiresRefresh(tr); got != tc.want {
				t.Errorf("requiresRefresh = %v, want %v", got, tc.want)
			}
		})
	}
}

// A projected volume is a tmpfs where the node can mount one, as the projected plugin's wrapped
// memory emptyDir: a token never reaches the node's disk.
func TestTokenVolumeOnTmpfs(t *testing.T) {
	tmpfs := &fakeTmpfs{mounted: map[string]int64{}}
	h := newHarness(t, nil, config(nil), func(o *Options) {
		o.Node = Node{RootDir: t.TempDir(), Tmpfs: tmpfs, MemoryCapacity: 8 << 30}
	})
	h.m.SetObjects(&fakeObjects{})
	h.m.SetTokens(&fakeTokens{clock: h.mock})
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token"})}
	h.add(pod)
	h.runUntil(time.Second)
	if data, _ := h.tokenFile("token"); data != "tok-1" {
		t.Fatalf("token %q", data)
	}
	tmpfs.mu.Lock()
	log := strings.Join(tmpfs.log, ",")
	tmpfs.mu.Unlock()
	if log != "mount v" {
		t.Fatalf("tmpfs mounts %s, want the projected volume's", log)
	}
	h.remove(pod)
	h.runUntil(time.Minute)
	tmpfs.mu.Lock()
	defer tmpfs.mu.Unlock()
	if len(tmpfs.mounted) != 0 {
		t.Errorf("still mounted after the pod went: %v", tmpfs.mounted)
	}
}
