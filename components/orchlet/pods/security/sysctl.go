package security

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// safeSysctls are Kubernetes' safe sysctls: namespaced, isolated between pods, always allowed.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// sysctlPattern is Kubernetes' sysctl name or pattern: dot- or slash-separated segments, the last
// of which may end in *.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

const sysctlMaxLength = 253

// Linux namespaces a sysctl can belong to, named as in the kubelet's messages.
const (
	nsIPC = "IPC"
	nsNet = "Net"
)

// ipcSysctls are the IPC namespace's sysctls; kernel.shm and kernel.msg stand for the patterns
// kernel.shm* and kernel.msg*.
var ipcSysctls = map[string]bool{
	"kernel.sem": true, "kernel.shmall": true, "kernel.shmmax": true, "kernel.shmmni": true,
	"kernel.shm_rmid_forced": true, "kernel.shm": true,
	"kernel.msgmax": true, "kernel.msgmnb": true, "kernel.msgmni": true, "kernel.msg": true,
}

// sysctlNamespace is the namespace a sysctl (or the prefix of a pattern) lives in, "" when it is
// not known to be namespaced, as Kubernetes' sysctl.GetNamespace.
func sysctlNamespace(name string) string {
	switch {
	case ipcSysctls[name], strings.HasPrefix(name, "fs.mqueue."):
		return nsIPC
	case strings.HasPrefix(name, "net."):
		return nsNet
	}
	return ""
}

// NormalizeSysctl turns a slash-separated name (net/ipv4/conf/eno2.100/rp_filter) into the dotted
// form (net.ipv4.conf.eno2/100.rp_filter), as the kubelet does.
func NormalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// SysctlAllowlist is the kubelet's patternAllowlist: the safe sysctls and --allowed-unsafe-sysctls,
// each with its namespace.
type SysctlAllowlist struct {
	names    map[string]string
	prefixes map[string]string
}

// NewSysctlAllowlist checks the --allowed-unsafe-sysctls patterns as the kubelet does at start.
func NewSysctlAllowlist(unsafe []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]string{}, prefixes: map[string]string{}}
	for _, s := range append(append([]string{}, safeSysctls...), unsafe...) {
		if len(s) > sysctlMaxLength || !sysctlPattern.MatchString(s) {
			return nil, fmt.Errorf("pods: allowedUnsafeSysctls (--allowed-unsafe-sysctls): %q must have at most %d characters and match %s", s, sysctlMaxLength, sysctlPattern)
		}
		name := NormalizeSysctl(s)
		prefix, prefixed := strings.CutSuffix(name, "*")
		ns := sysctlNamespace(prefix)
		if ns == "" {
			return nil, fmt.Errorf("pods: allowedUnsafeSysctls (--allowed-unsafe-sysctls): the sysctls %q are not known to be namespaced", prefix)
		}
		if prefixed {
			w.prefixes[prefix] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// Forbidden is why the pod may not run with its sysctls, "" when it may: a sysctl must be in the
// list, and one of a namespace the pod shares with the host is refused.
func (w *SysctlAllowlist) Forbidden(pod *corev1.Pod) string {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return ""
	}
	for _, s := range sc.Sysctls {
		name := NormalizeSysctl(s.Name)
		ns, ok := w.names[name]
		if !ok {
			for p, pns := range w.prefixes {
				if strings.HasPrefix(name, p) {
					ns, ok = pns, true
					break
				}
			}
		}
		switch {
		case !ok:
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		case ns == nsIPC && pod.Spec.HostIPC, ns == nsNet && pod.Spec.HostNetwork:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
	}
	return ""
}
