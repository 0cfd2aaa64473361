package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/pods/podsync"
	fakescript "orch.io/orch/fakecri/script"
)

// securityScript gives images users as ImageStatus reports them: nginx runs as root (no user
// set), app as 1000, named as a user name.
func securityScript() *fakescript.Script {
	return &fakescript.Script{Images: []fakescript.ImageRule{
		{Match: "app*", UID: ptr.To[int64](1000)},
		{Match: "named*", Username: "www-data"},
	}}
}

func nodeNS() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER, UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}
}

// baseSC is what kuberuntime's determineEffectiveSecurityContext sends for a container with no
// security settings, run as uid (from getImageUser): Unconfined seccomp, the default masked and
// read-only paths (securitycontext.ConvertToRuntimeMaskedPaths / ...ReadonlyPaths).
func baseSC(uid int64) *runtimeapi.LinuxContainerSecurityContext {
	return &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser:        &runtimeapi.Int64Value{Value: uid},
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
		NamespaceOptions: nodeNS(),
		MaskedPaths: []string{
			"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
			"/sys/devices/virtual/powercap",
		},
		ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
	}
}

// Each case's expectation is what determineEffectiveSecurityContext (security_context.go) with
// DetermineEffectiveSecurityContext, getSeccompProfile, getAppArmorProfile and
// NamespacesForPod makes of the pod.
func TestContainerSecurityContext(t *testing.T) {
	unmasked := corev1.UnmaskedProcMount
	for _, c := range []struct {
		name     string
		image    string
		podSC    *corev1.PodSecurityContext
		ctrSC    *corev1.SecurityContext
		annot    map[string]string
		node     Node
		hostPID  bool
		want     func() *runtimeapi.LinuxContainerSecurityContext
		sandbox  func(*runtimeapi.LinuxSandboxSecurityContext)
		wantUser string
	}{
		{name: "nothing set: the image's user, root", image: "nginx", want: func() *runtimeapi.LinuxContainerSecurityContext { return baseSC(0) }},
		{name: "image user name", image: "named", want: func() *runtimeapi.LinuxContainerSecurityContext {
			sc := baseSC(0)
			sc.RunAsUser, sc.RunAsUsername = nil, "www-data"
			return sc
		}},
		{name: "pod user and groups, container overrides the user", image: "nginx",
			podSC: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](100), RunAsGroup: ptr.To[int64](200), FSGroup: ptr.To[int64](300),
				SupplementalGroups: []int64{400, 500}, SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicyStrict),
				SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"}},
			ctrSC: &corev1.SecurityContext{RunAsUser: ptr.To[int64](101)},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(101)
				sc.RunAsGroup = &runtimeapi.Int64Value{Value: 200}
				sc.SupplementalGroups = []int64{300, 400, 500}
				sc.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
				sc.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c1,c2"}
				return sc
			},
			sandbox: func(s *runtimeapi.LinuxSandboxSecurityContext) {
				s.RunAsUser, s.RunAsGroup = &runtimeapi.Int64Value{Value: 100}, &runtimeapi.Int64Value{Value: 200}
				s.SupplementalGroups = []int64{300, 400, 500}
				s.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
				s.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c1,c2"}
			}},
		{name: "privileged, capabilities, read-only root, no escalation", image: "app",
			ctrSC: &corev1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.Privileged, sc.ReadonlyRootfs, sc.NoNewPrivs = true, true, true
				sc.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}}
				return sc
			},
			sandbox: func(s *runtimeapi.LinuxSandboxSecurityContext) { s.Privileged = true }},
		{name: "allowPrivilegeEscalation true leaves no_new_privs off", image: "app",
			ctrSC: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)},
			want:  func() *runtimeapi.LinuxContainerSecurityContext { return baseSC(1000) }},
		{name: "unmasked proc mount", image: "app", ctrSC: &corev1.SecurityContext{ProcMount: &unmasked},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
				return sc
			}},
		{name: "host thermal_throttle paths masked", image: "app", node: Node{ThermalThrottlePaths: []string{"/sys/devices/system/cpu/cpu0/thermal_throttle"}},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.MaskedPaths = append(sc.MaskedPaths, "/sys/devices/system/cpu/cpu0/thermal_throttle")
				return sc
			}},
		{name: "--seccomp-default", image: "app", node: Node{SeccompDefault: true},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.Seccomp.ProfileType = runtimeapi.SecurityProfile_RuntimeDefault
				return sc
			}},
		{name: "pod seccomp Localhost under --root-dir, container field first", image: "app",
			podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "ROOT/seccomp/p.json"}
				return sc
			}},
		{name: "container seccomp Unconfined beats --seccomp-default and the pod", image: "app", node: Node{SeccompDefault: true},
			podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			ctrSC: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			want:  func() *runtimeapi.LinuxContainerSecurityContext { return baseSC(1000) }},
		{name: "AppArmor from the pod field", image: "app",
			podSC: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				//lint:ignore SA1019 the deprecated field is set beside the new one, as the kubelet sets it
				sc.Apparmor, sc.ApparmorProfile = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "runtime/default"
				return sc
			}},
		{name: "AppArmor annotation before the pod field", image: "app",
			annot: map[string]string{"container.apparmor.security.beta.orch.io/c": "localhost/k8s-nginx"},
			podSC: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				//lint:ignore SA1019 the deprecated field is set beside the new one, as the kubelet sets it
				sc.Apparmor, sc.ApparmorProfile = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-nginx"}, "localhost/k8s-nginx"
				return sc
			}},
		{name: "host PID", image: "app", hostPID: true,
			want: func() *runtimeapi.LinuxContainerSecurityContext {
				sc := baseSC(1000)
				sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_NODE
				return sc
			},
			sandbox: func(s *runtimeapi.LinuxSandboxSecurityContext) {
				s.NamespaceOptions.Pid = runtimeapi.NamespaceMode_NODE
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, securityScript(), config(nil), func(o *Options) { o.Node = c.node })
			ct := ctr("c", c.image)
			ct.SecurityContext = c.ctrSC
			pod := newPod("p", ct)
			pod.Annotations = c.annot
			pod.Spec.SecurityContext = c.podSC
			pod.Spec.HostPID = c.hostPID
			h.add(pod)
			h.runUntil(time.Second)
			ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
			if len(ctrs) != 1 {
				t.Fatalf("%d containers created; events %q", len(ctrs), h.rec.lines())
			}
			want := c.want()
			// A Localhost profile is under --root-dir, the harness's temporary one.
			want.Seccomp.LocalhostRef = strings.Replace(want.Seccomp.LocalhostRef, "ROOT", h.m.node.RootDir, 1)
			diffProto(t, "container security context", want, ctrs[0].Config.Linux.SecurityContext)
			wantSB := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: nodeNS(), Seccomp: &runtimeapi.SecurityProfile{}}
			if c.sandbox != nil {
				c.sandbox(wantSB)
			}
			sbs := sent[*runtimeapi.RunPodSandboxRequest](h, "RunPodSandbox")
			diffProto(t, "sandbox security context", wantSB, sbs[0].Config.Linux.SecurityContext)
		})
	}
}

// verifyRunAsNonRoot's refusals, each with the kubelet's message, as a
// CreateContainerConfigError and a Warning event; an allowed one runs.
func TestRunAsNonRoot(t *testing.T) {
	for _, c := range []struct {
		name, image string
		user        *int64
		want        string
	}{
		{"image runs as root", "nginx", nil, `container has runAsNonRoot and image will run as root (pod: "p_default(uid-p)", container: c)`},
		{"runAsUser 0", "app", ptr.To[int64](0), `container's runAsUser breaks non-root policy (pod: "p_default(uid-p)", container: c)`},
		{"user name cannot be checked", "named", nil, `container has runAsNonRoot and image has non-numeric user (www-data), cannot verify user is non-root (pod: "p_default(uid-p)", container: c)`},
		{"image user 1000", "app", nil, ""},
		{"runAsUser 5 over a root image", "nginx", ptr.To[int64](5), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, securityScript(), config(nil), nil)
			ct := ctr("c", c.image)
			ct.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: c.user}
			h.add(newPod("p", ct))
			h.runUntil(time.Second)
			created := len(h.calls("CreateContainer", ""))
			if c.want == "" {
				if created != 1 {
					t.Fatalf("not created: %q", h.rec.lines())
				}
				return
			}
			if created != 0 {
				t.Fatalf("created despite runAsNonRoot")
			}
			// The reason the container waits, which the next status the sync publishes carries.
			w := h.pod("p").Status.ContainerStatuses[0].State.Waiting
			if w == nil || w.Reason != "CreateContainerConfigError" || w.Message != c.want {
				t.Errorf("waiting %+v, want CreateContainerConfigError %q", w, c.want)
			}
			found := false
			for _, e := range h.rec.reasons(podsync.ReasonFailed) {
				found = found || (e.kind == corev1.EventTypeWarning && strings.Contains(e.note, "Error: "+c.want))
			}
			if !found {
				t.Errorf("no Warning event %q in %q", c.want, h.rec.lines())
			}
		})
	}
}
