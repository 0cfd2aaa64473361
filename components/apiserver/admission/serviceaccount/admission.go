package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/registry/core"
)

// PluginName is the plugin's name in the chain.
const PluginName = "ServiceAccount"

// Names of the token volume the plugin mounts into pods, Kubernetes' renamed.
const (
	apiAccessVolumePrefix = "orch-api-access-"
	apiAccessMountPath    = "/var/run/secrets/orch.io/serviceaccount"
	// apiAccessTokenSeconds is Kubernetes' WarnOnlyBoundTokenExpirationSeconds, an hour and 7s.
	apiAccessTokenSeconds = 3607
)

// Config is what the plugin reads.
type Config struct {
	// ServiceAccount reads a service account.
	ServiceAccount func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	// RootCAKnown tells whether the server knows its root CA (always under app.Run): the token
	// volume then projects the namespace's orch-root-ca.crt.
	RootCAKnown func() bool
	// NameSuffix makes the random part of the token volume's name.
	NameSuffix func() string
}

// Plugin admits new pods as Kubernetes' ServiceAccount plugin does.
type Plugin struct {
	Config
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin.
func New(c Config) *Plugin { return &Plugin{Config: c} }

// Handles is true for creates.
func (*Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit makes a new pod naming no service account run as its namespace's default one, which must
// exist, and mounts its token; a mirror pod names none.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Subresource != "" {
		return nil
	}
	spec := &pod.Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if _, mirror := pod.Annotations[core.MirrorPodAnnotation]; mirror {
		if spec.ServiceAccountName != "" {
			return apierrors.NewForbidden(a.Resource, pod.Name, errors.New("a mirror pod may not reference service accounts"))
		}
		return nil
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = core.DefaultServiceAccountName
	}
	sa, err := p.ServiceAccount(ctx, pod.Namespace, spec.ServiceAccountName)
	if err != nil {
		return apierrors.NewForbidden(a.Resource, pod.Name, fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, spec.ServiceAccountName, err))
	}
	if shouldAutomount(sa, pod) {
		p.mountServiceAccountToken(pod, p.RootCAKnown())
	}
	return nil
}

// shouldAutomount is Kubernetes': the pod's choice, else the service account's, else true.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken gives every container without a mount at
// /var/run/secrets/orch.io/serviceaccount the projected orch-api-access-<random> volume there,
// read-only: a token, the root CA (when rootCA) and the namespace.
func (p *Plugin) mountServiceAccountToken(pod *corev1.Pod, rootCA bool) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, apiAccessVolumePrefix) {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = apiAccessVolumePrefix + p.NameSuffix()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: apiAccessMountPath}
	needed := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !slices.ContainsFunc(list[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == apiAccessMountPath }) {
				list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if hasVolume || !needed {
		return
	}
	mode, seconds := int32(corev1.ProjectedVolumeSourceDefaultMode), int64(apiAccessTokenSeconds)
	sources := []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &seconds}}}
	if rootCA {
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: core.RootCAConfigMap}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}})
	}
	sources = append(sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
		{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}})
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: sources}}})
}
