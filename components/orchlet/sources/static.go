package sources

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"orch.io/orch/components/orchlet/host"
)

// Annotations the agent sets on every static pod, Kubernetes' kubernetes.io/config.* renamed.
const (
	// ConfigSourceAnnotation names the source the pod came from: "file", "http" or "api".
	ConfigSourceAnnotation = "orchlet.orch.io/config.source"
	// ConfigHashAnnotation holds the pod's content hash, which is also its UID unless the manifest set one.
	ConfigHashAnnotation = "orchlet.orch.io/config.hash"
)

// IsStatic says the pod came from a file or URL source, as kubelettypes.IsStaticPod reads the
// config source annotation.
func IsStatic(pod *corev1.Pod) bool {
	src := pod.Annotations[ConfigSourceAnnotation]
	return src != "" && src != "api"
}

// NodeName is the name the node goes by: the --hostname-override when non-empty, else the host's
// name, trimmed and lowercased as Kubernetes does.
func NodeName(override string, h host.Host) (string, error) {
	name := override
	if name == "" {
		var err error
		if name, err = h.Hostname(); err != nil {
			return "", fmt.Errorf("cannot read the hostname: %w", err)
		}
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", errors.New("empty node name: set --hostname-override or give the host a name")
	}
	return name, nil
}

// staticPod applies Kubernetes' static-pod rules to a copy of pod read from origin by source.
func staticPod(pod *corev1.Pod, source, origin, nodeName string) (*corev1.Pod, error) {
	p := pod.DeepCopy()
	if p.UID == "" {
		uid, err := contentUID(p, source, origin, nodeName)
		if err != nil {
			return nil, err
		}
		p.UID = uid
	}
	p.Name = p.Name + "-" + nodeName
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
		return nil, fmt.Errorf("metadata.name: %q with the node name appended: %s", p.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(p.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("metadata.namespace: %q: %s", p.Namespace, strings.Join(errs, "; "))
	}
	p.Spec.NodeName = nodeName
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[ConfigHashAnnotation] = string(p.UID)
	p.Annotations[ConfigSourceAnnotation] = source
	if source == SourceFile {
		// File pods tolerate every NoExecute taint so node problems do not evict them, as in Kubernetes.
		addToleration(p, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	p.Status.Phase = corev1.PodPending
	return p, nil
}

// contentUID hashes the pod as read together with where it came from: Kubernetes adds the host and
// file name for file pods and the URL for HTTP pods, so one manifest in two places gives two pods.
func contentUID(p *corev1.Pod, source, origin, nodeName string) (types.UID, error) {
	data, err := json.Marshal(p) // encoding/json sorts map keys, so equal pods hash equally
	if err != nil {
		return "", fmt.Errorf("cannot hash the pod: %w", err)
	}
	h := md5.New()
	h.Write(data)
	if source == SourceFile {
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", origin)
	} else {
		fmt.Fprintf(h, "url:%s", origin)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}

func addToleration(p *corev1.Pod, t corev1.Toleration) {
	for _, have := range p.Spec.Tolerations {
		if have.MatchToleration(&t) {
			return
		}
	}
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
}
