package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/storage"
)

var eventTypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: eventsv1.SchemeGroupVersion.String()}

// encode writes the stored form: kind and apiVersion set, resourceVersion left out because the
// store's revision is the resourceVersion.
func encode(e *eventsv1.Event) ([]byte, error) {
	stored := *e
	stored.TypeMeta = eventTypeMeta
	stored.ResourceVersion = ""
	return json.Marshal(&stored)
}

func decode(kv storage.KeyValue) (*eventsv1.Event, error) {
	e := &eventsv1.Event{}
	if err := json.Unmarshal(kv.Value, e); err != nil {
		return nil, fmt.Errorf("stored object at %s is corrupt: %w", kv.Key, err)
	}
	e.TypeMeta = eventTypeMeta
	e.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return e, nil
}

// jsonWithVersion is the object as a client sees it, which is what a patch applies to.
func jsonWithVersion(e *eventsv1.Event) ([]byte, error) {
	out := *e
	out.TypeMeta = eventTypeMeta
	return json.Marshal(&out)
}

// storedPrefix and creationMarker describe the layout encode writes: kind and apiVersion first,
// then metadata, whose creationTimestamp follows the place Kubernetes gives resourceVersion (after
// name, namespace and uid). The marker cannot occur earlier: keys before it are fixed, and a quote
// inside a JSON string is always escaped.
var (
	storedPrefix   = []byte(`{"kind":"Event","apiVersion":"events.orch.io/v1","metadata":{`)
	creationMarker = []byte(`"creationTimestamp":`)
	rvMarker       = []byte(`"resourceVersion":`)
)

// appendItemJSON appends kv as a list item: the stored JSON without kind and apiVersion, with its
// resourceVersion spliced in. A value not in encode's layout takes the general way.
func appendItemJSON(dst []byte, kv storage.KeyValue) ([]byte, error) {
	v := kv.Value
	at := bytes.Index(v, creationMarker)
	if bytes.HasPrefix(v, storedPrefix) && at > 0 && !bytes.Contains(v[:at], rvMarker) {
		dst = append(dst, `{"metadata":{`...)
		dst = append(dst, v[len(storedPrefix):at]...)
		dst = append(dst, `"resourceVersion":"`...)
		dst = strconv.AppendInt(dst, kv.ModRevision, 10)
		dst = append(dst, `",`...)
		return append(dst, v[at:]...), nil
	}
	e, err := decode(kv)
	if err != nil {
		return nil, err
	}
	e.TypeMeta = metav1.TypeMeta{}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append(dst, data...), nil
}
