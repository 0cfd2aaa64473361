package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/conformance/target"
)

// answer is an HTTP response of the API server.
type answer struct {
	method, path string
	code         int
	body         []byte
	obj          map[string]any // the body as JSON, nil when it is not
}

func (a *answer) String() string {
	return fmt.Sprintf("%s %s answered %d: %s", a.method, a.path, a.code, bytes.TrimSpace(a.body))
}

// microTime is how a MicroTime is written on the wire.
const microTime = "2006-01-02T15:04:05.000000Z"

func eventSteps() []StepDef {
	return []StepDef{
		{`^a client without credentials$`, func(w *World) any { return func() error { w.creds = "none"; return nil } }},
		{`^a client with an unknown bearer token$`, func(w *World) any { return func() error { w.creds = "unknown"; return nil } }},
		{`^an event "([^"]*)" exists(?: in the (other) namespace)?$`, func(w *World) any { return w.eventExists }},
		{`^the next event has "([^"]*)" set to (.+)$`, func(w *World) any { return w.nextEventSet }},
		{`^the next event has no "([^"]*)"$`, func(w *World) any { return w.nextEventDrop }},
		{`^I (get|create|update|patch|delete) the event "([^"]*)"(?: with query "([^"]*)")?$`, func(w *World) any { return w.eventOp }},
		{`^I (list events|list events across namespaces|delete the collection of events)(?: in the (other) namespace)?(?: with query "([^"]*)")?$`, func(w *World) any { return w.collectionOp }},
		{`^I read the API group$`, func(w *World) any {
			return func() error { return w.request(http.MethodGet, w.t.GroupPath(), nil, "") }
		}},
		{`^the server answers (\d+)$`, func(w *World) any { return w.answers }},
		{`^the server answers one of ([\d, or]+)$`, func(w *World) any { return w.answersOneOf }},
		{`^the answer is an? (\w+)$`, func(w *World) any { return w.answerKind }},
		{`^the answer's "([^"]*)" is (.+)$`, func(w *World) any { return w.answerField }},
		{`^the answer has no "([^"]*)"$`, func(w *World) any { return w.answerLacks }},
		{`^the answer names the event "([^"]*)"$`, func(w *World) any { return w.answerNames }},
		{`^the answer names the Event API's group-version$`, func(w *World) any { return w.answerGroupVersion }},
		{`^the answer lists (no|the) events? ((?:"[^"]*"(?:, )?)+)$`, func(w *World) any { return w.answerLists }},
		{`^the answer is indented$`, func(w *World) any { return w.answerIndented }},
		{`^the refusal names the field "([^"]*)"$`, func(w *World) any { return w.refusalNames }},
		{`^the event "([^"]*)" (exists|does not exist)(?: in the (other) namespace)?$`, func(w *World) any { return w.eventPresence }},
		{`^the event "([^"]*)" has "([^"]*)" equal to (.+)$`, func(w *World) any { return w.eventFieldIs }},
		{`^the event "([^"]*)" has no "([^"]*)"$`, func(w *World) any { return w.eventLacks }},
		{`^the API group lists the resource "([^"]*)" as namespaced with verbs "([^"]*)"$`, func(w *World) any { return w.groupLists }},
	}
}

// name is the server-side name of a scenario's logical event name.
func (w *World) name(logical string) string { return logical + "-" + w.suffix }

func (w *World) namespace(other string) string {
	if other != "" {
		return w.t.Profile.APIServer.Namespaces[1]
	}
	return w.t.Profile.APIServer.Namespaces[0]
}

// eventBody is a valid new Event: every field SPEC.md requires of new Events, set.
func (w *World) eventBody(logical, ns string) map[string]any {
	a := w.t.Profile.APIServer
	return map[string]any{
		"apiVersion":          a.Group + "/" + a.Version,
		"kind":                "Event",
		"metadata":            map[string]any{"name": w.name(logical), "namespace": ns},
		"eventTime":           time.Now().UTC().Format(microTime),
		"action":              "Started",
		"reason":              "Started",
		"note":                "Started container web",
		"type":                "Normal",
		"reportingController": "conformance.orch.io/steps",
		"reportingInstance":   "conformance-1",
		"regarding":           map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "web-1"},
	}
}

func (w *World) eventPath(ns, logical string) string {
	p := w.t.GroupPath() + "/namespaces/" + ns + "/" + w.t.Profile.APIServer.Resource
	if logical != "" {
		p += "/" + w.name(logical)
	}
	return p
}

// request sends a request to the scenario's own API server when it started one, else to the
// suite's.
func (w *World) request(method, path string, body any, contentType string) error {
	var client *http.Client
	var base string
	switch {
	case w.server != nil:
		client, base = w.server.Client, w.server.BaseURL
	case w.serverExited:
		return fmt.Errorf("the scenario's API server exited %d while starting:\n%s", w.result.Code, target.Tail(w.result.Output()))
	default:
		c, err := w.t.APIServer()
		if err != nil {
			return err
		}
		client, base = c, w.t.URL("")
	}
	var rd *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(method, base+path, rd)
	} else {
		req, err = http.NewRequest(method, base+path, nil)
	}
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch w.creds {
	case "valid":
		req.Header.Set("Authorization", "Bearer "+w.t.Profile.APIServer.Token)
	case "unknown":
		req.Header.Set("Authorization", "Bearer not-a-token-the-server-knows")
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+w.bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	data, err := drain(resp.Body)
	if err != nil {
		return err
	}
	w.http = &answer{method: method, path: path, code: resp.StatusCode, body: data}
	var obj map[string]any
	if json.Unmarshal(data, &obj) == nil {
		w.http.obj = obj
	}
	return nil
}

func (w *World) create(logical, ns, query string) error {
	body := w.eventBody(logical, ns)
	for path, v := range w.extra {
		if err := setPath(body, path, v); err != nil {
			return err
		}
	}
	for _, path := range w.drop {
		removePath(body, path)
	}
	w.extra, w.drop = nil, nil
	return w.request(http.MethodPost, w.eventPath(ns, "")+query, body, "application/json")
}

func (w *World) eventExists(logical, other string) error {
	if err := w.create(logical, w.namespace(other), ""); err != nil {
		return err
	}
	if w.http.code != http.StatusCreated {
		return fmt.Errorf("creating %q: %s", logical, w.http)
	}
	return nil
}

func (w *World) nextEventSet(path, value string) error {
	v, err := parseValue(value)
	if err != nil {
		return err
	}
	if w.extra == nil {
		w.extra = map[string]any{}
	}
	w.extra[path] = v
	return nil
}

func (w *World) nextEventDrop(path string) error {
	w.drop = append(w.drop, path)
	return nil
}

func withQuery(q string) string {
	if q == "" {
		return ""
	}
	return "?" + q
}

func (w *World) eventOp(op, logical, query string) error {
	ns := w.namespace("")
	q := withQuery(query)
	switch op {
	case "get":
		return w.request(http.MethodGet, w.eventPath(ns, logical)+q, nil, "")
	case "create":
		return w.create(logical, ns, q)
	case "update":
		// Only series may change on an Event; the rest is immutable, so an update folds a repeat.
		if err := w.asAdmin(http.MethodGet, w.eventPath(ns, logical)); err != nil {
			return err
		}
		body := w.http.obj
		if w.http.code != http.StatusOK {
			body = w.eventBody(logical, ns)
		}
		body["series"] = map[string]any{"count": 2, "lastObservedTime": time.Now().UTC().Format(microTime)}
		return w.request(http.MethodPut, w.eventPath(ns, logical)+q, body, "application/json")
	case "patch":
		patch := map[string]any{"series": map[string]any{"count": 5, "lastObservedTime": time.Now().UTC().Format(microTime)}}
		return w.request(http.MethodPatch, w.eventPath(ns, logical)+q, patch, "application/merge-patch+json")
	default:
		return w.request(http.MethodDelete, w.eventPath(ns, logical)+q, nil, "")
	}
}

func (w *World) collectionOp(op, other, query string) error {
	q := withQuery(query)
	switch op {
	case "list events":
		return w.request(http.MethodGet, w.eventPath(w.namespace(other), "")+q, nil, "")
	case "list events across namespaces":
		return w.request(http.MethodGet, w.t.GroupPath()+"/"+w.t.Profile.APIServer.Resource+q, nil, "")
	default:
		return w.request(http.MethodDelete, w.eventPath(w.namespace(other), "")+q, nil, "")
	}
}

func (w *World) needAnswer() error {
	if w.http == nil {
		return fmt.Errorf("no request was made")
	}
	return nil
}

func (w *World) answers(code int) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if w.http.code != code {
		return fmt.Errorf("want %d: %s", code, w.http)
	}
	return nil
}

var (
	codeList = regexp.MustCompile(`\d+`)
	quoted   = regexp.MustCompile(`"([^"]*)"`)
)

func (w *World) answersOneOf(list string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	for _, c := range codeList.FindAllString(list, -1) {
		if strconv.Itoa(w.http.code) == c {
			return nil
		}
	}
	return fmt.Errorf("want one of %s: %s", list, w.http)
}

func (w *World) answerKind(kind string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if w.http.obj == nil || w.http.obj["kind"] != kind {
		return fmt.Errorf("want a %s: %s", kind, w.http)
	}
	return nil
}

func (w *World) answerField(path, value string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	want, err := parseValue(value)
	if err != nil {
		return err
	}
	got, ok := getPath(w.http.obj, path)
	if !ok || !sameJSON(got, want) {
		return fmt.Errorf("want %s = %s: %s", path, value, w.http)
	}
	return nil
}

func (w *World) answerNames(logical string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if n, _ := getPath(w.http.obj, "metadata.name"); n != w.name(logical) {
		return fmt.Errorf("want metadata.name %s: %s", w.name(logical), w.http)
	}
	return nil
}

func (w *World) answerGroupVersion() error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	a := w.t.Profile.APIServer
	if gv, _ := getPath(w.http.obj, "groupVersion"); gv != a.Group+"/"+a.Version {
		return fmt.Errorf("want groupVersion %s/%s: %s", a.Group, a.Version, w.http)
	}
	return nil
}

func (w *World) answerLacks(path string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if v, ok := getPath(w.http.obj, path); ok && v != nil {
		return fmt.Errorf("want no %s, got %v: %s", path, v, w.http)
	}
	return nil
}

func (w *World) answerLists(no, logicals string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	items, ok := w.http.obj["items"].([]any)
	if !ok {
		return fmt.Errorf("want a list with items: %s", w.http)
	}
	names := map[string]bool{}
	for _, it := range items {
		if n, ok := getPath(it, "metadata.name"); ok {
			names[fmt.Sprint(n)] = true
		}
	}
	for _, l := range quoted.FindAllStringSubmatch(logicals, -1) {
		l := l[1]
		if names[w.name(l)] != (no == "the") {
			return fmt.Errorf("want %s event %q listed: %s", no, l, w.http)
		}
	}
	return nil
}

func (w *World) answerIndented() error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if !bytes.Contains(w.http.body, []byte("\n  \"")) {
		return fmt.Errorf("want an indented body: %s", w.http)
	}
	return nil
}

func (w *World) refusalNames(field string) error {
	if err := w.needAnswer(); err != nil {
		return err
	}
	if named, ok := w.t.Profile.APIServer.CauseFields[field]; ok {
		field = named
	}
	causes, _ := getPath(w.http.obj, "details.causes")
	list, _ := causes.([]any)
	for _, c := range list {
		if f, _ := getPath(c, "field"); f == field {
			return nil
		}
	}
	return fmt.Errorf("want a cause naming %s: %s", field, w.http)
}

// asAdmin makes a checking request with valid credentials, whatever client the scenario plays.
func (w *World) asAdmin(method, path string) error {
	creds := w.creds
	w.creds = "valid"
	defer func() { w.creds = creds }()
	return w.request(method, path, nil, "")
}

func (w *World) eventPresence(logical, state, other string) error {
	if err := w.asAdmin(http.MethodGet, w.eventPath(w.namespace(other), logical)); err != nil {
		return err
	}
	want := http.StatusOK
	if state == "does not exist" {
		want = http.StatusNotFound
	}
	if w.http.code != want {
		return fmt.Errorf("want %q to %s: %s", logical, state, w.http)
	}
	return nil
}

func (w *World) eventFieldIs(logical, path, value string) error {
	if err := w.asAdmin(http.MethodGet, w.eventPath(w.namespace(""), logical)); err != nil {
		return err
	}
	return w.answerField(path, value)
}

func (w *World) eventLacks(logical, path string) error {
	if err := w.asAdmin(http.MethodGet, w.eventPath(w.namespace(""), logical)); err != nil {
		return err
	}
	if w.http.code != http.StatusOK {
		return fmt.Errorf("want %q readable: %s", logical, w.http)
	}
	return w.answerLacks(path)
}

func (w *World) groupLists(resource, verbs string) error {
	if err := w.asAdmin(http.MethodGet, w.t.GroupPath()); err != nil {
		return err
	}
	if resource == "events" {
		resource = w.t.Profile.APIServer.Resource
	}
	list, _ := w.http.obj["resources"].([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		if m["name"] != resource {
			continue
		}
		if m["namespaced"] != true {
			return fmt.Errorf("want %s namespaced: %s", resource, w.http)
		}
		have := map[string]bool{}
		vs, _ := m["verbs"].([]any)
		for _, v := range vs {
			have[fmt.Sprint(v)] = true
		}
		for _, v := range strings.Split(verbs, ",") {
			if v = strings.TrimSpace(v); !have[v] {
				return fmt.Errorf("want verb %s on %s: %s", v, resource, w.http)
			}
		}
		return nil
	}
	return fmt.Errorf("want resource %s listed: %s", resource, w.http)
}
