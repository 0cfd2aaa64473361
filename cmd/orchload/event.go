package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// noteFiller pads the note so an encoded event weighs about 1 KB, the size of a real event with a
// pull or probe message.
var noteFiller = strings.Repeat("Back-off pulling image; the registry answered slowly, retrying with backoff. ", 7)

// eventObject is the Event the load sends: of group (events.orch.io, or events.k8s.io on a
// Kubernetes peer) named name in namespace ns, about pod, an imaginary pod of that namespace; the
// seq'th event of its run. A busy node's recorder sends one warning for nine normal events.
func eventObject(group, ns, name, pod, seq string, warning bool, now time.Time) eventsv1.Event {
	reason, typ := "Pulled", "Normal"
	if warning {
		reason, typ = "BackOff", "Warning"
	}
	return eventsv1.Event{
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
		Note: fmt.Sprintf("Pod %s/%s event %s: %s", ns, pod, seq, noteFiller),
		Type: typ,
	}
}

// eventVariety is what varies from the seq'th event to the next: its pod, its seq and its type.
func eventVariety(seq int) (pod, seqText string, warning bool) {
	return "web-" + strconv.Itoa(seq%50), strconv.Itoa(seq), seq%10 == 0
}

// eventTemplate writes eventObject's JSON by filling the holes of the encoding of two events, a
// Normal and a Warning one: encoding each event by reflection cost the client about 8% of its CPU,
// which on a shared machine is CPU the server under test does not get.
type eventTemplate struct {
	pieces [2][]templatePiece // of a Normal and of a Warning event
}

// templatePiece is text followed by a hole (-1 after the last text).
type templatePiece struct {
	text string
	hole int
}

// The holes: stand-ins eventObject's fields are encoded with, found again in the encoding. Their
// values (a name, a pod, a seq, a time) never need JSON escaping.
const (
	holeName = iota
	holePod
	holeSeq
	holeTime
)

var (
	holeStandIns = [...]string{holeName: "name-standin", holePod: "web-standin", holeSeq: "987654321", holeTime: "2001-02-03T04:05:06.000000Z"}
	standInTime  = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
)

func newEventTemplate(group, ns string) *eventTemplate {
	t := &eventTemplate{}
	for w, warning := range [2]bool{false, true} {
		e := eventObject(group, ns, holeStandIns[holeName], holeStandIns[holePod], holeStandIns[holeSeq], warning, standInTime)
		b, err := json.Marshal(&e)
		if err != nil {
			panic(err) // a fixed struct of strings always encodes
		}
		t.pieces[w] = splitHoles(string(b))
	}
	return t
}

// splitHoles cuts s at every stand-in.
func splitHoles(s string) []templatePiece {
	var out []templatePiece
	for {
		at, hole := -1, -1
		for h, standIn := range holeStandIns {
			if i := strings.Index(s, standIn); i >= 0 && (at < 0 || i < at) {
				at, hole = i, h
			}
		}
		if at < 0 {
			return append(out, templatePiece{text: s, hole: -1})
		}
		out = append(out, templatePiece{text: s[:at], hole: hole})
		s = s[at+len(holeStandIns[hole]):]
	}
}

// newEvent returns the JSON of the seq'th event, named name and sent at now, of the template's
// group and namespace (eventObject with eventVariety(seq)).
func (t *eventTemplate) newEvent(name string, seq int, now time.Time) []byte {
	pod, seqText, warning := eventVariety(seq)
	pieces := t.pieces[0]
	if warning {
		pieces = t.pieces[1]
	}
	b := make([]byte, 0, 1400)
	for _, p := range pieces {
		b = append(b, p.text...)
		switch p.hole {
		case holeName:
			b = append(b, name...)
		case holePod:
			b = append(b, pod...)
		case holeSeq:
			b = append(b, seqText...)
		case holeTime:
			b = now.UTC().AppendFormat(b, metav1.RFC3339Micro)
		}
	}
	return b
}
