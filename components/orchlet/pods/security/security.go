package security

import (
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Host is what the containers' security settings take from the machine and the command line.
type Host struct {
	// SeccompDefault is --seccomp-default: RuntimeDefault for containers that name no profile.
	SeccompDefault bool
	// RootDir is --root-dir, under whose seccomp directory Localhost profiles are.
	RootDir string
	// ThermalThrottlePaths are the host's /sys/devices/system/cpu/cpu<N>/thermal_throttle
	// directories, masked in containers as the kubelet masks them.
	ThermalThrottlePaths []string
}

// appArmorAnnotationPrefix is Kubernetes' container.apparmor.security.beta.kubernetes.io/<container>
// annotation, renamed; static pods may still carry it instead of the field.
const appArmorAnnotationPrefix = "container.apparmor.security.beta.orch.io/"

// Masked and read-only paths: pkg/securitycontext's defaults, moby's, with /proc/interrupts.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

var supplementalGroupsPolicies = map[corev1.SupplementalGroupsPolicy]runtimeapi.SupplementalGroupsPolicy{
	corev1.SupplementalGroupsPolicyMerge:  runtimeapi.SupplementalGroupsPolicy_Merge,
	corev1.SupplementalGroupsPolicyStrict: runtimeapi.SupplementalGroupsPolicy_Strict,
}

// Effective is securitycontext.DetermineEffectiveSecurityContext: the pod's user,
// group, non-root and SELinux settings, overridden field by field by the container's.
func Effective(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	eff := &corev1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.SELinuxOptions, eff.RunAsUser, eff.RunAsGroup, eff.RunAsNonRoot = psc.SELinuxOptions, psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	override(&eff.SELinuxOptions, csc.SELinuxOptions)
	override(&eff.Capabilities, csc.Capabilities)
	override(&eff.Privileged, csc.Privileged)
	override(&eff.RunAsUser, csc.RunAsUser)
	override(&eff.RunAsGroup, csc.RunAsGroup)
	override(&eff.RunAsNonRoot, csc.RunAsNonRoot)
	override(&eff.ReadOnlyRootFilesystem, csc.ReadOnlyRootFilesystem)
	override(&eff.AllowPrivilegeEscalation, csc.AllowPrivilegeEscalation)
	override(&eff.ProcMount, csc.ProcMount)
	return eff
}

// override sets *field to the container's value when it has one.
func override[T any](field **T, value *T) {
	if value != nil {
		*field = value
	}
}

// VerifyRunAsNonRoot is the kubelet's: with runAsNonRoot, a runAsUser of 0, an image running as
// root, or an image user that is not numeric (so cannot be checked) is refused.
func VerifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, uid *int64, username string) error {
	eff := Effective(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", formatPod(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", formatPod(pod), c.Name)
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, formatPod(pod), c.Name)
	}
	return nil
}

// formatPod is the kubelet's format.Pod: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// Container is kuberuntime's determineEffectiveSecurityContext: the container's security context
// for CreateContainer, given the image's user (uid, else its user name).
func (h Host) Container(pod *corev1.Pod, c *corev1.Container, uid *int64, username string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := Effective(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		Privileged:     eff.Privileged != nil && *eff.Privileged,
		ReadonlyRootfs: eff.ReadOnlyRootFilesystem != nil && *eff.ReadOnlyRootFilesystem,
		SelinuxOptions: seLinuxOption(eff.SELinuxOptions),
		// AddNoNewPrivileges: only an explicit allowPrivilegeEscalation: false sets it.
		NoNewPrivs:    eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation,
		MaskedPaths:   append([]string{}, defaultMaskedPaths...),
		ReadonlyPaths: append([]string{}, defaultReadonlyPaths...),
	}
	if eff.ProcMount != nil && *eff.ProcMount == corev1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	} else {
		sc.MaskedPaths = append(sc.MaskedPaths, h.ThermalThrottlePaths...)
	}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{}, DropCapabilities: []string{}}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	} else {
		if uid != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *uid}
		}
		sc.RunAsUsername = username
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	var err error
	if sc.Seccomp, err = h.seccompProfile(pod, c); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 runtimes older than the Apparmor field read ApparmorProfile; the kubelet sets both
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	sc.NamespaceOptions = namespaceOptions(pod)
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.SupplementalGroups, sc.SupplementalGroupsPolicy, err = supplementalGroups(psc)
		if err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// supplementalGroups are the fsGroup then the supplemental groups, as the kubelet lists them for
// the sandbox and each container.
func supplementalGroups(psc *corev1.PodSecurityContext) ([]int64, runtimeapi.SupplementalGroupsPolicy, error) {
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	groups = append(groups, psc.SupplementalGroups...)
	if psc.SupplementalGroupsPolicy == nil {
		return groups, runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	p, ok := supplementalGroupsPolicies[*psc.SupplementalGroupsPolicy]
	if !ok {
		return nil, 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return groups, p, nil
}

func seLinuxOption(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// seccompProfile is kuberuntime's getSeccompProfile: the container's profile, else the pod's,
// else RuntimeDefault with --seccomp-default and Unconfined without; a Localhost profile is a
// file under --root-dir/seccomp.
func (h Host) seccompProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, error) {
	var p *corev1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	switch {
	case p == nil && h.SeccompDefault, p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			//lint:ignore ST1005 the kubelet's message, word for word
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(h.RootDir, "seccomp", *p.LocalhostProfile)}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile is kuberuntime's getAppArmorProfile over apparmor.GetProfile: the container's
// field, else its annotation, else the pod's field; with the deprecated profile string beside.
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	var p *corev1.AppArmorProfile
	switch v, ok := pod.Annotations[appArmorAnnotationPrefix+c.Name]; {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	case ok:
		p = appArmorFromAnnotation(v)
	case pod.Spec.SecurityContext != nil:
		p = pod.Spec.SecurityContext.AppArmorProfile
	}
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, corev1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, corev1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			corev1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// appArmorFromAnnotation reads runtime/default, unconfined or localhost/<name>; anything else is
// an unknown type, refused as the kubelet refuses it.
func appArmorFromAnnotation(v string) *corev1.AppArmorProfile {
	switch {
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case len(v) > len(corev1.DeprecatedAppArmorBetaProfileNamePrefix) && v[:len(corev1.DeprecatedAppArmorBetaProfileNamePrefix)] == corev1.DeprecatedAppArmorBetaProfileNamePrefix:
		name := v[len(corev1.DeprecatedAppArmorBetaProfileNamePrefix):]
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(v)}
}

// Sandbox is generatePodSandboxLinuxConfig's: privileged when any container is,
// RuntimeDefault seccomp for the sandbox itself, and the pod's user, groups and SELinux options.
func Sandbox(pod *corev1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Privileged:       hasPrivilegedContainer(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	// An unknown policy fails the containers, each with the kubelet's message.
	sc.SupplementalGroups, sc.SupplementalGroupsPolicy, _ = supplementalGroups(psc)
	sc.SelinuxOptions = seLinuxOption(psc.SELinuxOptions)
	return sc
}

// hasPrivilegedContainer is kubecontainer.HasPrivilegedContainer, init containers included.
func hasPrivilegedContainer(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true
			}
		}
	}
	return false
}

// namespaceOptions is runtimeutil.NamespacesForPod: the node's user namespace, as the kubelet
// sends for every pod with hostUsers unset or true (the only ones admitted).
func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}
