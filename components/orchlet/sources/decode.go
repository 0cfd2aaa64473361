package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// maxManifestBytes caps one manifest document, as Kubernetes caps the manifest URL's answer.
const maxManifestBytes = 10 << 20

// docSource is a Source of this package: it hands over its manifests undecoded, so a poll decodes
// only the documents whose bytes changed since the last one.
type docSource interface {
	Source
	readDocs(ctx context.Context) ([]doc, error)
}

// doc is one manifest as read: its bytes, or why they could not be read.
type doc struct {
	origin string
	data   []byte
	err    error
	// lists allows a List or PodList of pods, as the manifest URL does.
	lists bool
	// decoded says pods came decoded from a Source outside this package, with no bytes to compare.
	decoded bool
	pods    []*corev1.Pod
}

func (d doc) decode() ([]*corev1.Pod, error) {
	if d.err != nil || d.decoded {
		return d.pods, d.err
	}
	return decodePods(d.data, d.lists)
}

// readDocs reads src, through its bytes when it is a source of this package.
func readDocs(ctx context.Context, src Source) ([]doc, error) {
	if ds, ok := src.(docSource); ok {
		return ds.readDocs(ctx)
	}
	ms, err := src.Read(ctx)
	docs := make([]doc, len(ms))
	for i, m := range ms {
		docs[i] = doc{origin: m.Origin, err: m.Err, decoded: true, pods: m.Pods}
	}
	return docs, err
}

func decodeDocs(docs []doc) []Manifest {
	var out []Manifest
	for _, d := range docs {
		pods, err := d.decode()
		out = append(out, Manifest{Origin: d.origin, Pods: pods, Err: err})
	}
	return out
}

// decodePods reads one YAML or JSON document holding a core/v1 Pod or, when lists are allowed, a
// List or PodList of them, and checks each pod minimally.
func decodePods(data []byte, allowList bool) ([]*corev1.Pod, error) {
	doc, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("not an object with apiVersion and kind: %w", err)
	}
	want := "Pod"
	if allowList {
		want = "Pod, PodList or List"
	}
	switch {
	case tm.Kind == "":
		return nil, fmt.Errorf("kind: required, want %s", want)
	case tm.Kind == "Pod":
		pod, err := decodePod(doc, "")
		if err != nil {
			return nil, err
		}
		return []*corev1.Pod{pod}, nil
	case allowList && (tm.Kind == "PodList" || tm.Kind == "List"):
		return decodeList(doc, tm)
	default:
		return nil, fmt.Errorf("kind: %q is not %s", tm.Kind, want)
	}
}

func decodeList(doc []byte, tm metav1.TypeMeta) ([]*corev1.Pod, error) {
	if tm.APIVersion != "v1" {
		return nil, fmt.Errorf("apiVersion: %q is not v1", tm.APIVersion)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(doc, &list); err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	var pods []*corev1.Pod
	var errs []error
	for i, item := range list.Items {
		var itm metav1.TypeMeta
		if err := json.Unmarshal(item, &itm); err != nil {
			errs = append(errs, fmt.Errorf("items[%d]: not an object: %w", i, err))
			continue
		}
		// A PodList's items are pods by declaration; a List's items must say what they are.
		if tm.Kind == "List" || itm.Kind != "" {
			if itm.Kind != "Pod" {
				errs = append(errs, fmt.Errorf("items[%d].kind: %q is not Pod", i, itm.Kind))
				continue
			}
		}
		pod, err := decodePod(item, fmt.Sprintf("items[%d].", i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pods = append(pods, pod)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pods, nil
}

// decodePod decodes one pod object and checks what the agent cannot run without; prefix names the
// object's place in its document for errors.
func decodePod(doc []byte, prefix string) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := json.Unmarshal(doc, &pod); err != nil {
		return nil, fmt.Errorf("%snot a v1 Pod: %w", prefix, err)
	}
	if pod.APIVersion != "v1" && !(prefix != "" && pod.APIVersion == "") {
		return nil, fmt.Errorf("%sapiVersion: %q is not v1", prefix, pod.APIVersion)
	}
	var errs []error
	if pod.Name == "" {
		errs = append(errs, fmt.Errorf("%smetadata.name: required", prefix))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, fmt.Errorf("%sspec.containers: at least one container is required", prefix))
	}
	for i, c := range pod.Spec.Containers {
		if strings.TrimSpace(c.Name) == "" {
			errs = append(errs, fmt.Errorf("%sspec.containers[%d].name: required", prefix, i))
		}
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, fmt.Errorf("%sspec.containers[%d].image: required", prefix, i))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	defaultRequests(&pod)
	return &pod, nil
}

// defaultRequests is the part of SetDefaults_Pod that the kubelet's decoder applies to static
// pods and that decides their QoS class: a container's limits stand for the requests it omits.
func defaultRequests(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}
