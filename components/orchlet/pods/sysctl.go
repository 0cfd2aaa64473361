package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
)

// ReasonSysctlForbidden is the admission failure of a pod setting a sysctl that is neither safe
// nor allowed by --allowed-unsafe-sysctls, as Kubernetes'.
const ReasonSysctlForbidden = "SysctlForbidden"

// admitSysctls rejects for good a pod whose sysctls are forbidden, as the kubelet's sysctl
// admission handler does, and says whether the pod was admitted.
func (m *Manager) admitSysctls(p *podState) bool {
	msg := m.sysctls.Forbidden(p.pod)
	if msg == "" {
		return true
	}
	p.rejected = msg
	p.status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: ReasonSysctlForbidden, Message: msg}
	m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, ReasonSysctlForbidden, "Admit", "%s", msg)
	m.log.Info("Pod rejected", "pod", klog.KObj(p.pod), "reason", ReasonSysctlForbidden, "message", msg)
	return false
}
