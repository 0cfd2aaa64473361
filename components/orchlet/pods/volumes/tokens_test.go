package volumes

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
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
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

// harness drives a volume manager on a mock clock, as the pod workers do: SetUp before the sandbox,
// Refresh at each sync of the running pod.
type harness struct {
	t    *testing.T
	ctx  context.Context
	mock *clock.Mock
	m    *Manager
	rec  *recorder
	root string
}

func newHarness(t *testing.T, node Node) *harness {
	mock := clock.NewMock()
	mock.Set(t0)
	rec := &recorder{}
	node.RootDir = t.TempDir()
	m := New(Options{Clock: mock, Recorder: rec, Logger: klog.Background(), Node: node,
		ReadFile: func(name string) ([]byte, error) { return os.ReadFile(name) }})
	return &harness{t: t, ctx: context.Background(), mock: mock, m: m, rec: rec, root: node.RootDir}
}

func tokenHarness(t *testing.T, node Node) (*harness, *fakeTokens) {
	h := newHarness(t, node)
	h.m.SetObjects(&fakeObjects{})
	tokens := &fakeTokens{clock: h.mock}
	h.m.SetTokens(tokens)
	h.m.tokens.jitter = func() float64 { return 0 }
	return h, tokens
}

// setUp sets up the pod's volumes, as its first sync does.
func (h *harness) setUp(pod *corev1.Pod) {
	h.t.Helper()
	if err := h.m.SetUp(h.ctx, Pod{Pod: pod}); err != nil {
		h.t.Fatalf("%v; events %v", err, h.rec.notes)
	}
}

// resyncUntil refreshes the pod's volumes at each minute after t0 up to d, as its syncs do.
func (h *harness) resyncUntil(pod *corev1.Pod, d time.Duration) {
	for next := h.mock.Now().Truncate(time.Minute).Add(time.Minute); !next.After(t0.Add(d)); next = next.Add(time.Minute) {
		h.mock.Set(next)
		h.m.Refresh(h.ctx, Pod{Pod: pod})
	}
	h.mock.Set(t0.Add(d))
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
	path := filepath.Join(h.root, "pods", "uid-p", "volumes", projectedPlugin, "v", name)
	data, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v; events %v", err, h.rec.notes)
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
	h, tokens := tokenHarness(t, Node{})
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(
		corev1.ServiceAccountTokenProjection{Path: "token"},
		corev1.ServiceAccountTokenProjection{Path: "vault/token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)},
	)}
	pod.Spec.Volumes[0].Projected.DefaultMode = ptr.To[int32](0o640)
	h.setUp(pod)
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
}

// Tokens are renewed as the kubelet's token manager renews them, on the agent's clock: past 80%
// of their life (the sync after), not before; a token of the pod's named service account.
func TestTokenRefresh(t *testing.T) {
	h, tokens := tokenHarness(t, Node{})
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.ServiceAccountName = "builder"
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](600)})}
	h.setUp(pod)
	sync := time.Minute
	if data, _ := h.tokenFile("token"); data != "tok-1" {
		t.Fatalf("token %q", data)
	}
	// 80% of 600s is 480s: the syncs before keep the token.
	h.resyncUntil(pod, 480*time.Second)
	if data, _ := h.tokenFile("token"); data != "tok-1" || len(tokens.requests()) != 1 {
		t.Fatalf("before 80%% of its life: %q, %d requests", data, len(tokens.requests()))
	}
	h.resyncUntil(pod, 480*time.Second+sync+time.Second)
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
	h.resyncUntil(pod, 480*time.Second+480*time.Second+sync)
	if data, _ := h.tokenFile("token"); data != "tok-2" || len(h.rec.reasons(ReasonFailedMount)) != 0 {
		t.Fatalf("a failed renewal: %q, events %v", data, h.rec.notes)
	}
	h.resyncUntil(pod, 480*time.Second+600*time.Second+2*sync)
	evs := h.rec.reasons(ReasonFailedMount)
	if len(evs) == 0 || evs[0] != `MountVolume.SetUp failed for volume "v" : the API is away` {
		t.Errorf("events %v", h.rec.notes)
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
			h, _ := tokenHarness(t, Node{})
			pod := newPod("p", ctr("a", "i"), ctr("b", "i"))
			pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token"})}
			tc.edit(pod)
			h.setUp(pod)
			_, info := h.tokenFile("token")
			st := info.Sys().(*syscall.Stat_t)
			if st.Uid != tc.uid || info.Mode().Perm() != tc.mode || (tc.group >= 0 && int64(st.Gid) != tc.group) {
				t.Errorf("owner %d:%d mode %v, want %d mode %v", st.Uid, st.Gid, info.Mode().Perm(), tc.uid, tc.mode)
			}
		})
	}
}

// A projected volume is a tmpfs where the node can mount one, as the projected plugin's wrapped
// memory emptyDir: a token never reaches the node's disk.
func TestTokenVolumeOnTmpfs(t *testing.T) {
	tmpfs := &tmpfs{}
	h, _ := tokenHarness(t, Node{Tmpfs: tmpfs, MemoryCapacity: 8 << 30})
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "token"})}
	h.setUp(pod)
	if data, _ := h.tokenFile("token"); data != "tok-1" {
		t.Fatalf("token %q", data)
	}
	tmpfs.mu.Lock()
	log := strings.Join(tmpfs.log, ",")
	tmpfs.mu.Unlock()
	if log != "mount v" {
		t.Fatalf("tmpfs mounts %s, want the projected volume's", log)
	}
	if err := h.m.TearDown(pod); err != nil {
		t.Fatal(err)
	}
	tmpfs.mu.Lock()
	defer tmpfs.mu.Unlock()
	if tmpfs.n != 0 {
		t.Errorf("still mounted after the pod went: %v", tmpfs.log)
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
