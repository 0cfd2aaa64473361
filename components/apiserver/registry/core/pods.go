package core

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// DefaultTerminationGracePeriodSeconds is a pod's grace period when its spec names none.
const DefaultTerminationGracePeriodSeconds int64 = 30

// MirrorPodAnnotation marks a pod an agent created to show one of its static pods.
const MirrorPodAnnotation = "orch.io/config.mirror"

// PodStrategy is the rules of pods.
type PodStrategy struct{}

func (PodStrategy) Resource() schema.GroupVersionResource { return GroupVersion.WithResource("pods") }
func (PodStrategy) Kind() string                          { return "Pod" }
func (PodStrategy) NamespaceScoped() bool                 { return true }
func (PodStrategy) New() runtime.Object                   { return &corev1.Pod{} }
func (PodStrategy) NewList() runtime.Object               { return &corev1.PodList{} }
func (PodStrategy) AllowCreateOnUpdate() bool             { return false }
func (PodStrategy) ReturnDeletedObject() bool             { return true }

// PrepareForCreate defaults the spec as Kubernetes' defaulting does and starts the pod Pending.
func (PodStrategy) PrepareForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Generation = 1
	DefaultPodSpec(&pod.Spec)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&pod.Spec)}
}

// DefaultPodSpec fills what Kubernetes' defaulting fills, so what is stored is what runs.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := DefaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = "default-scheduler"
	}
	// The v1 conversion: serviceAccount is the deprecated name of serviceAccountName and mirrors it.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	defaultTokenProjections(spec)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.EnableServiceLinks == nil {
		t := true
		spec.EnableServiceLinks = &t
	}
	if spec.Priority == nil {
		var p int32
		spec.Priority = &p
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			defaultContainer(&list[i])
		}
	}
	for i := range spec.Tolerations {
		t := &spec.Tolerations[i]
		if t.Operator == "" {
			t.Operator = corev1.TolerationOpEqual
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if tag := imageTag(c.Image); tag == "" || tag == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	// Limits without requests request the limits, as Kubernetes defaults them.
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

// imageTag is the tag of an image reference, "" when it has none (a digest counts as a tag).
func imageTag(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		return image[i:]
	}
	slash := strings.LastIndexByte(image, '/')
	if i := strings.LastIndexByte(image, ':'); i > slash {
		return image[i+1:]
	}
	return ""
}

// qosClass is Kubernetes' QoS class of a pod: Guaranteed when every container's cpu and memory
// limits equal its requests, BestEffort when none has any, Burstable otherwise.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	guaranteed, besteffort := true, true
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				lim, hasLim := c.Resources.Limits[r]
				if hasReq || hasLim {
					besteffort = false
				}
				if !hasLim || !hasReq || req.Cmp(lim) != 0 {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case besteffort:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// PrepareForUpdate keeps status (it changes through pods/status) and bumps generation on a spec
// change.
func (PodStrategy) PrepareForUpdate(obj, old runtime.Object) {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	pod.Status = o.Status
	DefaultPodSpec(&pod.Spec)
	if !apiequality.Semantic.DeepEqual(pod.Spec, o.Spec) {
		pod.Generation = o.Generation + 1
	}
}

func (PodStrategy) Validate(obj runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidatePodSpec(&pod.Spec, field.NewPath("spec"))...)
}

var (
	restartPolicies = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}
	pullPolicies    = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	protocols       = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	dnsPolicies     = []string{string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}
)

// ValidatePodSpec checks what a user of Kubernetes would see refused: containers, names, images,
// policies, ports, resources, volumes and their mounts, tolerations.
func ValidatePodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes := sets.New[string]()
	for i, v := range spec.Volumes {
		errs = append(errs, validateUniqueName(v.Name, path.Child("volumes").Index(i).Child("name"), volumes)...)
	}
	errs = append(errs, validateTokenProjections(spec, path)...)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(spec.InitContainers, path.Child("initContainers"), names, volumes)...)
	errs = append(errs, validateContainers(spec.Containers, path.Child("containers"), names, volumes)...)
	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, restartPolicies))
	}
	switch spec.DNSPolicy {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, dnsPolicies))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if spec.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), spec.NodeName, msg))
		}
	}
	for k, v := range spec.NodeSelector {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path.Child("nodeSelector"), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(path.Child("nodeSelector"), v, msg))
		}
	}
	for i, t := range spec.Tolerations {
		p := path.Child("tolerations").Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
	}
	return errs
}

// validateUniqueName is the rule of volume and container names: given, a DNS label, and not one
// already in seen (which it joins).
func validateUniqueName(name string, p *field.Path, seen sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p, ""))
	case seen.Has(name):
		errs = append(errs, field.Duplicate(p, name))
	default:
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	seen.Insert(name)
	return errs
}

func validateContainers(containers []corev1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		p := path.Index(i)
		errs = append(errs, validateUniqueName(c.Name, p.Child("name"), names)...)
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		} else if c.Image != strings.TrimSpace(c.Image) {
			errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		switch c.ImagePullPolicy {
		case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		default:
			errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies))
		}
		ports := sets.New[string]()
		for j, port := range c.Ports {
			pp := p.Child("ports").Index(j)
			if port.ContainerPort < 1 || port.ContainerPort > 65535 {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, "must be between 1 and 65535, inclusive"))
			}
			if port.HostPort != 0 && (port.HostPort < 1 || port.HostPort > 65535) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, "must be between 1 and 65535, inclusive"))
			}
			switch port.Protocol {
			case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			default:
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, protocols))
			}
			if port.Name != "" {
				for _, msg := range validation.IsValidPortName(port.Name) {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
				if ports.Has(port.Name) {
					errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
				}
				ports.Insert(port.Name)
			}
		}
		for name, q := range c.Resources.Requests {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
			if lim, ok := c.Resources.Limits[name]; ok && q.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		}
		for name, q := range c.Resources.Limits {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
		mounts := sets.New[string]()
		for j, m := range c.VolumeMounts {
			mp := p.Child("volumeMounts").Index(j)
			if !volumes.Has(m.Name) {
				errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
			}
			if m.MountPath == "" {
				errs = append(errs, field.Required(mp.Child("mountPath"), ""))
			} else if mounts.Has(m.MountPath) {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
			}
			mounts.Insert(m.MountPath)
		}
	}
	return errs
}

// podUpdateForbidden is Kubernetes' message for a change to an immutable part of a pod spec.
const podUpdateForbidden = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// ValidateUpdate allows, as Kubernetes does, only images, activeDeadlineSeconds (set, or lowered)
// and added tolerations to change; spec.nodeName is set by binding, never by an update.
func (PodStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	specPath := field.NewPath("spec")
	errs := generic.ValidateObjectMetaUpdate(&pod.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidatePodSpec(&pod.Spec, specPath)...)
	if len(pod.Spec.Containers) != len(o.Spec.Containers) || len(pod.Spec.InitContainers) != len(o.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath, podUpdateForbidden))
	}
	if d, od := pod.Spec.ActiveDeadlineSeconds, o.Spec.ActiveDeadlineSeconds; od != nil && (d == nil || *d > *od) {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), d, "must be less than or equal to previous value"))
	}
	if !tolerationsAdded(pod.Spec.Tolerations, o.Spec.Tolerations) {
		errs = append(errs, field.Forbidden(specPath.Child("tolerations"), "existing toleration can not be modified except its tolerationSeconds"))
	}
	// Compare what may not change: a copy of the new spec with the mutable parts taken from old.
	mutable := pod.Spec.DeepCopy()
	for i := range mutable.Containers {
		mutable.Containers[i].Image = o.Spec.Containers[i].Image
	}
	for i := range mutable.InitContainers {
		mutable.InitContainers[i].Image = o.Spec.InitContainers[i].Image
	}
	mutable.ActiveDeadlineSeconds = o.Spec.ActiveDeadlineSeconds
	mutable.Tolerations = o.Spec.Tolerations
	if mutable.NodeName != o.Spec.NodeName {
		errs = append(errs, field.Invalid(specPath.Child("nodeName"), pod.Spec.NodeName, "field is immutable: a pod is bound to a node through pods/binding"))
		mutable.NodeName = o.Spec.NodeName
	}
	if !apiequality.Semantic.DeepEqual(mutable, &o.Spec) {
		errs = append(errs, field.Forbidden(specPath, podUpdateForbidden))
	}
	return errs
}

// tolerationsAdded tells whether next keeps every toleration of old (tolerationSeconds aside).
func tolerationsAdded(next, old []corev1.Toleration) bool {
	for _, o := range old {
		found := false
		for _, n := range next {
			n.TolerationSeconds, o.TolerationSeconds = nil, nil
			if n == o {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// PodSelectableFieldNames are the field-selector keys of pods.
var PodSelectableFieldNames = []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}

func (PodStrategy) SelectableFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	return fields.Set{
		"metadata.name":            pod.Name,
		"metadata.namespace":       pod.Namespace,
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         boolString(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             pod.Status.PodIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

// GracePeriod is Kubernetes' pod rule: the asked period or the spec's, at once for a pod that is
// not on a node or has finished, and never negative.
func (PodStrategy) GracePeriod(obj runtime.Object, asked *int64) int64 {
	pod := obj.(*corev1.Pod)
	period := DefaultTerminationGracePeriodSeconds
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if asked != nil {
		period = *asked
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return 0
	}
	if period < 0 {
		period = 1
	}
	return period
}

func (PodStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."},
		{Name: "Node", Type: "string", Priority: 1, Description: "NodeName is a request to schedule this pod onto a specific node."},
	}
}

// Row is kubectl's pod line: ready containers, the status reason kubectl shows, restarts, age.
func (PodStrategy) Row(obj runtime.Object, now time.Time) []any {
	pod := obj.(*corev1.Pod)
	ready, restarts := 0, int32(0)
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, cs := range pod.Status.ContainerStatuses {
		restarts += cs.RestartCount
		if cs.Ready && cs.State.Running != nil {
			ready++
		}
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
			reason = cs.State.Terminated.Reason
		}
	}
	if pod.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	ip := pod.Status.PodIP
	if ip == "" {
		ip = "<none>"
	}
	node := pod.Spec.NodeName
	if node == "" {
		node = "<none>"
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)), reason, int64(restarts), age(now, pod.CreationTimestamp), ip, node}
}

// PodStatusStrategy is pods/status: only status changes.
type PodStatusStrategy struct{ PodStrategy }

func (PodStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	resetMetaForStatus(&pod.ObjectMeta, &o.ObjectMeta)
	pod.Spec = o.Spec
}

var phases = []string{string(corev1.PodPending), string(corev1.PodRunning), string(corev1.PodSucceeded), string(corev1.PodFailed), string(corev1.PodUnknown)}

// ValidateUpdate of a status: a known phase, and a finished pod stays finished.
func (PodStatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	path := field.NewPath("status", "phase")
	var errs field.ErrorList
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, "":
	default:
		errs = append(errs, field.NotSupported(path, pod.Status.Phase, phases))
	}
	if (o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed) && pod.Status.Phase != o.Status.Phase {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("cannot transition from terminal phase %q to %q", o.Status.Phase, pod.Status.Phase)))
	}
	return errs
}

// PodBindingStrategy is pods/binding: the server's own write of spec.nodeName and the scheduled
// condition, which a pod update may not make.
type PodBindingStrategy struct{ PodStrategy }

func (PodBindingStrategy) PrepareForUpdate(obj, old runtime.Object) {}

func (PodBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList { return nil }
