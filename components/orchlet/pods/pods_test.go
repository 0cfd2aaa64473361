package pods

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/fakecri/calllog"
	fakescript "orch.io/orch/fakecri/script"
)

func TestPodComesUp(t *testing.T) {
	cases := []struct {
		name    string
		image   string
		policy  corev1.PullPolicy
		preload bool
		pulls   int
	}{
		{"IfNotPresent with the image present pulls nothing", "nginx:1.27", corev1.PullIfNotPresent, true, 0},
		{"IfNotPresent with the image missing pulls", "nginx:1.27", corev1.PullIfNotPresent, false, 1},
		{"Always pulls though the image is present", "nginx:1.27", corev1.PullAlways, true, 1},
		{":latest defaults to Always", "nginx:latest", "", true, 1},
		{"a tag defaults to IfNotPresent", "nginx:1.27", "", true, 0},
		{"Never with the image present pulls nothing", "nginx:1.27", corev1.PullNever, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := &fakescript.Script{}
			if tc.preload {
				script.Node.PreloadImages = []string{tc.image}
			}
			h := newHarness(t, script, config(nil), nil)
			c := ctr("web", tc.image)
			c.ImagePullPolicy = tc.policy
			h.add(newPod("web", c))
			h.runUntil(5 * time.Second)

			if got := len(h.calls("PullImage", "")); got != tc.pulls {
				t.Errorf("PullImage calls = %d, want %d", got, tc.pulls)
			}
			var order []string
			for _, call := range h.rt.Calls(calllog.Filter{}) {
				switch call.Method {
				case "RunPodSandbox", "PullImage", "CreateContainer", "StartContainer":
					order = append(order, call.Method)
				}
			}
			want := []string{"RunPodSandbox", "CreateContainer", "StartContainer"}
			if tc.pulls > 0 {
				want = []string{"RunPodSandbox", "PullImage", "CreateContainer", "StartContainer"}
			}
			if !slices.Equal(order, want) {
				t.Errorf("calls = %v, want %v", order, want)
			}
			sbs := h.sandboxes()
			if len(sbs) != 1 {
				t.Fatalf("sandboxes = %d, want 1", len(sbs))
			}
			for k, v := range map[string]string{labels.PodName: "web", labels.PodNamespace: "default", labels.PodUID: "uid-web", "app": "web"} {
				if sbs[0].Labels[k] != v {
					t.Errorf("sandbox label %s = %q, want %q", k, sbs[0].Labels[k], v)
				}
			}
			ctrs := h.containers()
			if len(ctrs) != 1 || ctrs[0].Labels[labels.ContainerName] != "web" || ctrs[0].Labels[labels.PodUID] != "uid-web" {
				t.Fatalf("containers = %v", ctrs)
			}
			pod := h.pod("web")
			if pod.Status.Phase != corev1.PodRunning || pod.Status.ContainerStatuses[0].State.Running == nil {
				t.Errorf("status = %+v", pod.Status)
			}
			if !strings.HasPrefix(pod.Status.ContainerStatuses[0].ContainerID, "fakecri://") {
				t.Errorf("containerID = %q", pod.Status.ContainerStatuses[0].ContainerID)
			}
			for _, r := range []string{podsync.ReasonCreated, podsync.ReasonStarted} {
				if len(h.rec.reasons(r)) != 1 {
					t.Errorf("%s events = %v", r, h.rec.reasons(r))
				}
			}
		})
	}
}

func TestSandboxConfigFollowsKubelet(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ClusterDNS = []string{"10.255.255.53"} }), nil)
	pod := newPod("static-web", ctr("web", "nginx:1.27"))
	pod.Annotations = map[string]string{"orchlet.orch.io/config.source": "file"}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	cfg := h.m.sandboxConfig(pod, 0)
	if cfg.LogDirectory != "/var/log/pods/default_static-web_uid-static-web" {
		t.Errorf("log directory = %q", cfg.LogDirectory)
	}
	if cfg.Hostname != "static-web" || cfg.Metadata.Uid != "uid-static-web" || cfg.Metadata.Namespace != "default" {
		t.Errorf("metadata = %v hostname %q", cfg.Metadata, cfg.Hostname)
	}
	if !slices.Equal(cfg.DnsConfig.GetServers(), []string{"10.255.255.53"}) {
		t.Errorf("dns = %v", cfg.DnsConfig)
	}
	if len(cfg.PortMappings) != 1 || cfg.PortMappings[0].ContainerPort != 80 {
		t.Errorf("ports = %v", cfg.PortMappings)
	}
	if cfg.Annotations["orchlet.orch.io/config.source"] != "file" {
		t.Errorf("annotations = %v", cfg.Annotations)
	}
	if cfg.Linux.SecurityContext.NamespaceOptions.Pid != runtimeapi.NamespaceMode_CONTAINER {
		t.Errorf("namespace options = %v", cfg.Linux.SecurityContext.NamespaceOptions)
	}

	pod.Spec.HostNetwork = true
	pod.Spec.Hostname = "named"
	host := h.m.sandboxConfig(pod, 0)
	if host.Hostname != "" || host.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host-network pod: hostname %q (runc refuses one in the node's UTS namespace), network %v", host.Hostname, host.Linux.SecurityContext.NamespaceOptions.Network)
	}
}

func TestNeverPullWithoutTheImage(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(nil), nil)
	c := ctr("web", "nginx:1.27")
	c.ImagePullPolicy = corev1.PullNever
	h.add(newPod("web", c))
	h.runUntil(5 * time.Second)
	if n := len(h.calls("PullImage", "")) + len(h.calls("CreateContainer", "")); n != 0 {
		t.Errorf("pulled or created %d times", n)
	}
	w := h.pod("web").Status.ContainerStatuses[0].State.Waiting
	if w == nil || w.Reason != "ErrImageNeverPull" {
		t.Errorf("waiting = %+v", w)
	}
	if len(h.rec.reasons(images.ReasonNeverPull)) == 0 {
		t.Error("no ErrImageNeverPull event")
	}
}

// crashing is a script whose container "app" exits with code after running for after.
func crashing(after time.Duration, code int32) *fakescript.Script {
	return &fakescript.Script{
		Node:       fakescript.NodeScript{PreloadImages: []string{"app:1"}},
		Containers: []fakescript.ContainerRule{{Match: fakescript.ContainerMatch{Name: "app"}, Exit: &fakescript.ExitSpec{After: dur(after), Code: code}}},
	}
}

func gaps(ts []time.Duration) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i]-ts[i-1])
	}
	return out
}

func TestCrashLoopBackOff(t *testing.T) {
	h := newHarness(t, crashing(0, 1), config(nil), nil)
	h.add(newPod("crash", ctr("app", "app:1")))
	h.runUntil(16 * time.Minute)

	got := gaps(starts(h.calls("StartContainer", "")))
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("gaps between starts = %v, want %v first", got, want)
	}
	st := h.pod("crash").Status
	cs := st.ContainerStatuses[0]
	if st.Phase != corev1.PodRunning || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
		t.Errorf("status = %+v", st)
	}
	if cs.RestartCount != int32(len(got)) || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("restartCount %d (want %d), last state %+v", cs.RestartCount, len(got), cs.LastTerminationState)
	}
	if len(h.rec.reasons(podsync.ReasonBackOff)) == 0 {
		t.Error("no BackOff event")
	}
}

func TestCrashLoopBackOffResetsAfterTenMinutes(t *testing.T) {
	cases := []struct {
		name string
		runs time.Duration
		want []time.Duration
	}{
		{"a container that ran 11 minutes restarts at once", 11 * time.Minute, []time.Duration{11 * time.Minute, 11 * time.Minute}},
		{"a container that ran 9 minutes waits its back-off", 9 * time.Minute, []time.Duration{9 * time.Minute, 9*time.Minute + 10*time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Exits fall on 10s boundaries, so relisting every 10s sees each when it happens.
			h := newHarness(t, crashing(tc.runs, 1), config(nil), func(o *Options) { o.RelistPeriod = 10 * time.Second })
			h.add(newPod("crash", ctr("app", "app:1")))
			h.runUntil(2*tc.runs + 20*time.Second)
			got := gaps(starts(h.calls("StartContainer", "")))
			if !slices.Equal(got, tc.want) {
				t.Errorf("gaps between starts = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRestartPolicy(t *testing.T) {
	cases := []struct {
		policy corev1.RestartPolicy
		code   int32
		starts int
		phase  corev1.PodPhase
	}{
		{corev1.RestartPolicyNever, 0, 1, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, 1, 1, corev1.PodFailed},
		{corev1.RestartPolicyOnFailure, 0, 1, corev1.PodSucceeded},
		{corev1.RestartPolicyOnFailure, 1, 3, corev1.PodRunning},
		{corev1.RestartPolicyAlways, 0, 3, corev1.PodRunning},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy)+"/exit"+string(rune('0'+tc.code)), func(t *testing.T) {
			h := newHarness(t, crashing(5*time.Second, tc.code), config(nil), nil)
			pod := newPod("p", ctr("app", "app:1"))
			pod.Spec.RestartPolicy = tc.policy
			h.add(pod)
			// starts at 0s, exits 5s; restarts at 5s, exits 10s; restarts at 20s, exits 25s.
			h.runUntil(30 * time.Second)
			if got := len(h.calls("StartContainer", "")); got != tc.starts {
				t.Errorf("starts = %d, want %d", got, tc.starts)
			}
			if got := h.pod("p").Status.Phase; got != tc.phase {
				t.Errorf("phase = %s, want %s", got, tc.phase)
			}
		})
	}
}

func TestRemovedPodTornDownForeignLeftAlone(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27", "other:1"}}}, config(nil), nil)
	// A sandbox and container someone else made, without the agent's labels.
	sb, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "foreign", Namespace: "x", Uid: "foreign-uid"}}})
	if err != nil {
		t.Fatal(err)
	}
	fc, err := h.rt.CreateContainer(h.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "f"}, Image: &runtimeapi.ImageSpec{Image: "other:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.StartContainer(h.ctx, &runtimeapi.StartContainerRequest{ContainerId: fc.ContainerId}); err != nil {
		t.Fatal(err)
	}
	h.rt.ResetCalls()

	pod := newPod("web", ctr("web", "nginx:1.27"))
	h.add(pod)
	h.runUntil(10 * time.Second)
	h.remove(pod)
	h.runUntil(20 * time.Second)

	for _, m := range []string{"StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"} {
		if n := len(h.calls(m, "")); n != 1 {
			t.Errorf("%s calls = %d, want 1", m, n)
		}
	}
	for _, c := range h.rt.Calls(calllog.Filter{}) {
		if strings.Contains(c.Request, sb.PodSandboxId) || strings.Contains(c.Request, fc.ContainerId) {
			t.Errorf("touched a foreign object: %s %s", c.Method, c.Request)
		}
	}
	sbs, ctrs := h.sandboxes(), h.containers()
	if len(sbs) != 1 || sbs[0].Id != sb.PodSandboxId || len(ctrs) != 1 || ctrs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("left sandboxes %v containers %v, want only the foreign ones, running", sbs, ctrs)
	}
	if len(h.m.Pods()) != 0 {
		t.Errorf("pods = %v, want none", h.m.Pods())
	}
	if len(h.rec.reasons(podsync.ReasonKilling)) != 1 {
		t.Errorf("Killing events = %v", h.rec.reasons(podsync.ReasonKilling))
	}
}

func TestOrphanedPodTornDown(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}}}, config(nil), nil)
	// A pod an earlier run of the agent made, which no source names now.
	cfg := h.m.sandboxConfig(newPod("old", ctr("web", "nginx:1.27")), 0)
	if _, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	h.runUntil(5 * time.Second)
	if n := len(h.calls("RemovePodSandbox", "")); n != 1 || len(h.sandboxes()) != 0 {
		t.Errorf("RemovePodSandbox calls = %d, sandboxes left %d", n, len(h.sandboxes()))
	}
}

// runEarlier runs pod's sandbox and first container in the runtime as an earlier run of the agent
// made them, labelled and annotated, without these workers knowing the pod.
func (h *harness) runEarlier(pod *corev1.Pod) {
	h.t.Helper()
	sbCfg := h.m.sandboxConfig(pod, 0)
	sb, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg, err := h.m.containerConfig(h.ctx, newPodState(pod, t0), &pod.Spec.Containers[0], pod.Spec.Containers[0].Image, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.rt.CreateContainer(h.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cfg, SandboxConfig: sbCfg})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.rt.StartContainer(h.ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		h.t.Fatal(err)
	}
}

// An orphan's container stops with the grace its pod had, recorded on it when it was made (the pod
// gone from the sources while the agent was down): not the default 30 s.
func TestOrphanStopsWithItsRecordedGrace(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}}}, config(nil), nil)
	old := newPod("old", ctr("web", "nginx:1.27"))
	old.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	h.runEarlier(old)
	h.runUntil(10 * time.Second)
	stops := h.calls("StopContainer", "")
	if len(stops) != 1 || !strings.HasSuffix(stops[0].Request, " timeout=3") {
		t.Errorf("StopContainer calls %+v, want one with timeout=3", stops)
	}
	if len(h.sandboxes()) != 0 {
		t.Errorf("sandboxes left %d", len(h.sandboxes()))
	}
}

// A restarted agent hears of a pod being deleted that it never held while the runtime runs it (the
// API listed it mid-deletion): the pod is not Stopped while that removal waits in the inbox, is
// torn down with the deletion's grace, not the 30s its containers record, and is Stopped after
// (the scenario agent-kill-api-pods-deleted shows its deletion confirmed only then).
// The removal of a pod the runtime does not hold is nothing to do.
func TestRemovalOfAPodNeverHeldButRunning(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}},
		Containers: []fakescript.ContainerRule{{Match: fakescript.ContainerMatch{Image: "nginx*"}, Stop: &fakescript.StopSpec{Delay: fakescript.Duration(time.Hour)}}}},
		config(nil), func(o *Options) { o.SourcesReady = func() bool { return false } })
	old := newPod("old", ctr("web", "nginx:1.27"))
	old.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	h.runEarlier(old)
	h.runUntil(2 * time.Second) // relisted: the runtime's pod waits for the sources
	deleting := old.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Second)}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](4)
	never := newPod("never", ctr("web", "nginx:1.27"))
	never.DeletionTimestamp = deleting.DeletionTimestamp
	h.m.Update(sources.Update{Op: sources.OpRemove, Source: sources.SourceAPI, Pod: deleting}, sources.Update{Op: sources.OpRemove, Source: sources.SourceAPI, Pod: never})
	if h.m.Stopped(old.UID) {
		t.Error("Stopped while its removal waits in the inbox")
	}
	h.runUntil(10 * time.Second)
	if !h.m.Stopped(never.UID) || len(h.calls("", "never")) != 0 {
		t.Errorf("a pod never held nor run: Stopped %v, calls %v", h.m.Stopped(never.UID), h.calls("", "never"))
	}
	stops := h.calls("StopContainer", "")
	if len(stops) != 1 || !strings.HasSuffix(stops[0].Request, " timeout=4") {
		t.Errorf("StopContainer calls %+v, want one with the deletion's timeout=4", stops)
	}
	if len(h.sandboxes()) != 0 || !h.m.Stopped(old.UID) {
		t.Errorf("after the teardown: sandboxes left %d, Stopped %v", len(h.sandboxes()), h.m.Stopped(old.UID))
	}
}

// Until every source has sent its pods, a pod of the runtime no source names yet is adopted, not
// killed: a restarted agent must not tear down what the API server is about to hand it.
func TestOrphansWaitForTheSources(t *testing.T) {
	var ready atomic.Bool
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}}}, config(nil), func(o *Options) {
		o.SourcesReady = ready.Load
	})
	cfg := h.m.sandboxConfig(newPod("old", ctr("web", "nginx:1.27")), 0)
	if _, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	h.runUntil(5 * time.Second)
	if n := len(h.calls("RemovePodSandbox", "")); n != 0 || len(h.sandboxes()) != 1 {
		t.Fatalf("torn down before the sources were ready: RemovePodSandbox calls = %d", n)
	}
	// Ready, with nothing changed in the runtime: the next relist judges it an orphan.
	ready.Store(true)
	h.runUntil(10 * time.Second)
	if n := len(h.calls("RemovePodSandbox", "")); n != 1 || len(h.sandboxes()) != 0 {
		t.Errorf("RemovePodSandbox calls = %d, sandboxes left %d", n, len(h.sandboxes()))
	}
}

// A pod handed over by the sources waits in the inbox until a Step applies it; until then no pod
// of the runtime's is an orphan, or a restarted agent's relist, in the Step the pods arrive
// during, tears down the static pods it is about to adopt.
func TestOrphansWaitForTheInbox(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}}}, config(nil), nil)
	delivered := h.m.delivered(ready.Load)
	if !delivered() {
		t.Fatal("not delivered with the sources ready and nothing sent")
	}
	h.add(newPod("web", ctr("web", "nginx:1.27")))
	if delivered() {
		t.Error("delivered with a pod in the inbox")
	}
	h.runUntil(time.Second)
	if !delivered() {
		t.Error("not delivered once a Step applied the inbox")
	}
	ready.Store(false)
	if delivered() {
		t.Error("delivered with the sources not ready")
	}
}

func TestRuntimeRequestTimeout(t *testing.T) {
	script := &fakescript.Script{
		Node:   fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}},
		Faults: []fakescript.FaultRule{{Method: "CreateContainer", Hang: true, Times: 1}},
	}
	h := newHarness(t, script, config(nil), nil)
	h.add(newPod("web", ctr("web", "nginx:1.27")))
	h.runUntil(3 * time.Minute)

	creates := h.calls("CreateContainer", "")
	if len(creates) != 2 {
		t.Fatalf("CreateContainer calls = %d, want 2", len(creates))
	}
	if creates[0].End.Sub(creates[0].Start) != 2*time.Minute || creates[0].Code != "DeadlineExceeded" {
		t.Errorf("first CreateContainer %v to %v code %s, want cancelled after 2m0s", creates[0].Start, creates[0].End, creates[0].Code)
	}
	if creates[1].Start.Sub(creates[0].End) != backoff.Initial || creates[1].Code != "OK" {
		t.Errorf("retry at %v code %s, want %v after the timeout", creates[1].Start.Sub(creates[0].End), creates[1].Code, backoff.Initial)
	}
	failed := h.rec.reasons(podsync.ReasonFailed)
	if len(failed) != 1 || failed[0].at != 2*time.Minute || !strings.Contains(failed[0].note, "deadline exceeded") {
		t.Errorf("Failed events = %+v", failed)
	}
	if len(h.rec.reasons(ReasonFailedSync)) != 1 {
		t.Errorf("FailedSync events = %+v", h.rec.reasons(ReasonFailedSync))
	}
	if h.pod("web").Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s", h.pod("web").Status.Phase)
	}
}

// TestDeterminism runs a busy scenario twice and compares the runtime's call logs, the events and
// the pod statuses byte for byte.
func TestDeterminism(t *testing.T) {
	run := func() []byte {
		script := crashing(3*time.Second, 2)
		script.Images = []fakescript.ImageRule{{Match: "*slow*", PullDuration: dur(30 * time.Second)}}
		script.Faults = []fakescript.FaultRule{{Method: "StartContainer", Hang: true, Times: 1, AfterCalls: 2}}
		h := newHarness(t, script, config(func(c *v1beta1.OrchletConfiguration) { c.RuntimeRequestTimeout.Duration = 20 * time.Second }), nil)
		h.add(newPod("a", ctr("app", "app:1")), newPod("b", ctr("web", "slow:1"), ctr("app", "app:1")), newPod("c", ctr("web", "slow:2")))
		h.runUntil(3 * time.Minute)
		b, err := json.Marshal(struct {
			Calls  []calllog.Call
			Events []string
			Pods   []corev1.Pod
		}{h.rt.Calls(calllog.Filter{}), h.rec.lines(), h.m.Pods()})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first, second := run(), run()
	if string(first) != string(second) {
		t.Fatalf("two runs differ:\n%s\n%s", first, second)
	}
	if len(first) < 1000 {
		t.Fatalf("call log too short to prove anything: %s", first)
	}
}

func TestSandboxLostIsRecreated(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), nil)
	h.add(newPod("p", ctr("app", "app:1")))
	h.runUntil(5 * time.Second)
	first := h.sandboxes()[0].Id
	if _, err := h.rt.StopPodSandbox(h.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: first}); err != nil {
		t.Fatal(err)
	}
	h.runUntil(10 * time.Second)
	runs := h.calls("RunPodSandbox", "")
	if len(runs) != 2 || !strings.Contains(runs[1].Request, "attempt=1") {
		t.Fatalf("RunPodSandbox calls = %+v, want a second with attempt 1", runs)
	}
	creates := h.calls("CreateContainer", "")
	if len(creates) != 2 || !strings.Contains(creates[1].Request, "attempt=1") || creates[1].Code != "OK" {
		t.Errorf("CreateContainer calls = %+v, want the new instance to take attempt 1", creates)
	}
	if st := h.pod("p").Status; st.Phase != corev1.PodRunning || st.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("status = %+v", st)
	}
}

// While its sandbox cannot be created, a pod shows Pending with its containers ContainerCreating
// rather than no status at all.
func TestStatusWhileSandboxFails(t *testing.T) {
	script := &fakescript.Script{Faults: []fakescript.FaultRule{{Method: "RunPodSandbox", Error: &fakescript.FaultError{Code: "Unknown", Message: "runc create failed"}}}}
	h := newHarness(t, script, config(nil), nil)
	h.add(newPod("web", ctr("web", "nginx:1.27")))
	h.runUntil(30 * time.Second)
	pod := h.pod("web")
	if pod.Status.Phase != corev1.PodPending || len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("status = %+v", pod.Status)
	}
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("container state = %+v, want Waiting ContainerCreating", pod.Status.ContainerStatuses[0].State)
	}
	if len(h.calls("RunPodSandbox", "")) < 2 {
		t.Error("sandbox creation not retried")
	}
}

// An update of a running pod's container image (the API lets a pod's images change) restarts the
// container with the new image, whatever the restart policy, as the kubelet's computePodActions
// kills a container whose definition changed: a Killing event saying so, the old instance
// stopped within the pod's grace period, a new attempt created from the new image, and the status
// showing it running.
func TestImageChangeRestartsContainer(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27", "nginx:1.28"}}}, config(nil), nil)
	pod := newPod("web", ctr("web", "nginx:1.27"))
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	h.add(pod)
	h.runUntil(time.Second)
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.28"
	h.add(changed)
	h.runUntil(10 * time.Second)
	kills := h.rec.reasons(podsync.ReasonKilling)
	if len(kills) != 1 || kills[0].note != "Container web definition changed, will be restarted" {
		t.Errorf("Killing events %v", kills)
	}
	if n := len(h.calls("StopContainer", "")); n != 1 {
		t.Errorf("%d StopContainer calls, want 1", n)
	}
	creates := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(creates) != 2 || creates[1].Config.Metadata.Attempt != 1 || creates[1].Config.Image.UserSpecifiedImage != "nginx:1.28" {
		t.Fatalf("CreateContainer requests %v", creates)
	}
	st := h.pod("web").Status
	if cs := st.ContainerStatuses[0]; cs.Image != "nginx:1.28" || cs.State.Running == nil || cs.RestartCount != 1 || st.Phase != corev1.PodRunning {
		t.Errorf("status %+v", st)
	}
}
