package events

import (
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
