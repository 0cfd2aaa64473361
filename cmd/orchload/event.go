package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// noteFiller pads the note so an encoded event weighs about 1 KB, the size of a real event with a
// pull or probe message.
var noteFiller = strings.Repeat("Back-off pulling image; the registry answered slowly, retrying with backoff. ", 7)

// newEvent returns the JSON of a valid Event of group (events.orch.io, or events.k8s.io on a
// Kubernetes peer) named name in namespace ns, about an imaginary pod of that namespace; seq varies
// the pod, reason and type as a busy node's recorder would.
func newEvent(group, ns, name string, seq int, now time.Time) []byte {
	pod := fmt.Sprintf("web-%d", seq%50)
	reason, typ := "Pulled", "Normal"
	if seq%10 == 0 {
		reason, typ = "BackOff", "Warning"
	}
	e := eventsv1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: group + "/v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ns,
			Labels:    map[string]string{"app": "web", "generator": "orchload"},
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "orch.io/orchlet",
		ReportingInstance:   "orchlet-node-1",
		Action:              "Pulling",
		Reason:              reason,
		Regarding: corev1.ObjectReference{
			Kind:            "Pod",
			Namespace:       ns,
			Name:            pod,
			UID:             "7c1e5f0a-3b2d-4e6f-8a9b-0c1d2e3f4a5b",
			APIVersion:      "v1",
			ResourceVersion: "4711",
			FieldPath:       "spec.containers{web}",
		},
		Note: fmt.Sprintf("Pod %s/%s event %d: %s", ns, pod, seq, noteFiller),
		Type: typ,
	}
	b, err := json.Marshal(&e)
	if err != nil {
		panic(err) // a fixed struct of strings always encodes
	}
	return b
}
