package pods

import (
	"fmt"
	"strings"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/images"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/sources"
)

// Admission failures, as Kubernetes' kubelet gives them.
const (
	// ReasonOutOfPods is the admission failure of a pod beyond the node's capacity.
	ReasonOutOfPods = "OutOfpods"
	// ReasonSysctlForbidden is the admission failure of a pod setting a sysctl that is neither safe
	// nor allowed by --allowed-unsafe-sysctls.
	ReasonSysctlForbidden = "SysctlForbidden"
)

// AdmitFunc is an admission handler run before the others (Kubernetes adds the eviction manager's
// first): a refusal fails the pod for good with the reason and message, and records them as a
// Warning event.
type AdmitFunc func(pod *corev1.Pod) (ok bool, reason, message string)

// admitEviction runs the eviction manager's admission; a refused pod fails for good.
func (m *Manager) admitEviction(p *podState) bool {
	if m.admit == nil {
		return true
	}
	ok, reason, message := m.admit(p.Pod)
	if ok {
		return true
	}
	m.reject(p, reason, message)
	return false
}

// reject fails the pod for good at its admission, with a Warning event.
func (m *Manager) reject(p *podState, reason, message string) {
	p.Reject(reason, message)
	m.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, reason, "Admit", "%s", message)
	m.log.Info("Pod rejected", "pod", klog.KObj(p.Pod), "reason", reason, "message", message)
}

// admitSysctls rejects for good a pod whose sysctls are forbidden, as the kubelet's sysctl
// admission handler does, and says whether the pod was admitted.
func (m *Manager) admitSysctls(p *podState) bool {
	msg := m.sysctls.Forbidden(p.Pod)
	if msg == "" {
		return true
	}
	m.reject(p, ReasonSysctlForbidden, msg)
	return false
}

// ReasonUnsupportedPodSpec rejects a pod that asks for what this agent cannot give: an API
// object it has no client to read, a volume type it has no plugin for. Nothing is dropped silently.
const ReasonUnsupportedPodSpec = "UnsupportedPodSpec"

// admitSpec rejects for good a pod this agent cannot run as written, with a Warning event naming
// the field, and says whether the pod was admitted.
func (m *Manager) admitSpec(p *podState) bool {
	if secrets := p.Pod.Spec.ImagePullSecrets; len(secrets) > 0 && m.objects == nil {
		// As the kubelet does when it cannot read them: a warning, and pulls without them. With
		// an API server they are read at each pull.
		names := make([]string, len(secrets))
		for i, s := range secrets {
			names[i] = s.Name
		}
		m.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, images.ReasonFailedToRetrieveImagePullSecret, "Pull",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(names, ", "))
	}
	msg := m.unsupported(p.Pod)
	if msg == "" {
		m.warnSizeLimits(p.Pod)
		return true
	}
	m.reject(p, ReasonUnsupportedPodSpec, msg)
	return false
}

// unsupported says what of the pod cannot be honoured, or "".
func (m *Manager) unsupported(pod *corev1.Pod) string {
	if sources.IsStatic(pod) {
		// PreventStaticPodAPIReferences, as the kubelet's config source refuses such a manifest.
		if res := apiObjectReference(pod); res != "" {
			return fmt.Sprintf("static pods may not reference %s", res)
		}
	}
	if field := apiReferenceField(pod, m.objects != nil); field != "" {
		return fmt.Sprintf("%s: reading API objects is not supported by this orchlet", field)
	}
	if pod.Spec.RuntimeClassName != nil && *pod.Spec.RuntimeClassName != "" {
		return fmt.Sprintf("spec.runtimeClassName: %s: runtime classes are not supported by this orchlet", *pod.Spec.RuntimeClassName)
	}
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return "spec.hostUsers: false: user namespaces are not supported by this orchlet"
	}
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		return "spec.resources: pod-level resources are not supported by this orchlet"
	}
	return m.volumes.Unsupported(pod)
}

// apiObjectReference is podutil.HasAPIObjectReference: the first kind of API object the pod
// refers to, by resource name.
func apiObjectReference(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" || pod.Spec.DeprecatedServiceAccount != "" {
		return "serviceaccounts"
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil, v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
			return "secrets"
		case v.ConfigMap != nil:
			return "configmaps"
		case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
			return "persistentvolumeclaims"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.Secret != nil:
					return "secrets"
				case s.ConfigMap != nil:
					return "configmaps"
				case s.ServiceAccountToken != nil:
					return "serviceaccounts"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case s.PodCertificate != nil:
					return "podcertificaterequests"
				}
			}
		}
	}
	for _, c := range allContainers(pod) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				return "configmaps"
			}
			if e.SecretRef != nil {
				return "secrets"
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return "configmaps"
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return "secrets"
			}
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	return ""
}

// apiReferenceField names the first container field that reads an API object (or a file of
// another container) this agent cannot resolve: configmaps and secrets unless objects (it has an
// API client), files of other containers and resource claims in any case.
func apiReferenceField(pod *corev1.Pod, objects bool) string {
	for _, set := range []struct {
		path string
		cs   []corev1.Container
	}{{"spec.initContainers", pod.Spec.InitContainers}, {"spec.containers", pod.Spec.Containers}} {
		for i, c := range set.cs {
			if len(c.EnvFrom) > 0 && !objects {
				return fmt.Sprintf("%s[%d].envFrom", set.path, i)
			}
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				at := fmt.Sprintf("%s[%d].env[%d].valueFrom", set.path, i, j)
				switch {
				case e.ValueFrom.ConfigMapKeyRef != nil && !objects:
					return at + ".configMapKeyRef"
				case e.ValueFrom.SecretKeyRef != nil && !objects:
					return at + ".secretKeyRef"
				case e.ValueFrom.FileKeyRef != nil:
					return at + ".fileKeyRef"
				}
			}
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "spec.resourceClaims"
	}
	return ""
}

func allContainers(pod *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

// ReasonSizeLimitNotEnforced warns that an emptyDir's sizeLimit on the node's disk is recorded
// only: the kubelet enforces it by evicting the pod, which this orchlet does only with an eviction
// manager, --local-storage-capacity-isolation and volume stats (a positive
// --volume-stats-agg-period).
const ReasonSizeLimitNotEnforced = "SizeLimitNotEnforced"

func (m *Manager) warnSizeLimits(pod *corev1.Pod) {
	if m.sizeLimitsEnforced {
		return
	}
	for i, v := range pod.Spec.Volumes {
		if ed := v.EmptyDir; ed != nil && ed.Medium == corev1.StorageMediumDefault && ed.SizeLimit != nil {
			m.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, ReasonSizeLimitNotEnforced, "Admit",
				"spec.volumes[%d].emptyDir.sizeLimit: volume %q may hold more than %s: this orchlet does not evict pods over it", i, v.Name, ed.SizeLimit.String())
		}
	}
}
