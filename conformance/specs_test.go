package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"orch.io/orch/conformance/report"
	"orch.io/orch/conformance/target"
)

// TestSpecs runs the ginkgo specs: what reads better as Go than as Gherkin (watch streams, paging
// consistency, concurrent writers), labelled with the rules they prove as "rule:<id>".
func TestSpecs(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "orch conformance specs")
}

var specTarget *target.Target

var _ = BeforeEach(func() {
	if specTarget == nil {
		var err error
		specTarget, err = openShared()
		Expect(err).NotTo(HaveOccurred())
	}
	if !specTarget.Has("apiserver") {
		Skip("not applicable: the target has no apiserver")
	}
})

// ruleLabels labels a spec with the catalog rules it proves.
func ruleLabels(ids ...string) Labels {
	out := make(Labels, len(ids))
	for i, id := range ids {
		out[i] = "rule:" + id
	}
	return out
}

var _ = ReportAfterEach(func(r SpecReport) {
	o := report.Outcome{Ref: "specs_test.go " + r.FullText()}
	for _, l := range r.Labels() {
		if id, ok := strings.CutPrefix(l, "rule:"); ok {
			o.Rules = append(o.Rules, id)
		}
	}
	switch {
	case r.State == types.SpecStatePassed:
		o.Status = report.StatusPassed
	case r.State == types.SpecStateSkipped:
		o.Status, o.Detail = report.StatusNotApplicable, r.Failure.Message
	default:
		o.Status, o.Detail = report.StatusFailed, r.Failure.Message
	}
	recorder.Add(o)
})

var _ = ReportAfterSuite("JUnit report", func(r Report) {
	if *reportsFlag != "" {
		Expect(reporters.GenerateJUnitReport(r, filepath.Join(*reportsFlag, "specs-junit.xml"))).To(Succeed())
	}
})

// newSpecWorld is a scenario world for a spec: valid credentials, unique names.
func newSpecWorld() *World {
	return &World{t: specTarget, creds: "valid", suffix: fmt.Sprintf("%06x", rand.IntN(1<<24))}
}

// mustDo makes a request and fails the spec on a transport error.
func mustDo(w *World, method, path string, body any, contentType string) *answer {
	GinkgoHelper()
	Expect(w.request(method, path, body, contentType)).To(Succeed())
	return w.http
}

type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

var _ = Describe("Watching events", ruleLabels("event.op.list.watch", "events.create-and-watch"), func() {
	It("delivers ADDED, MODIFIED and DELETED for an event, in order, from the list's resourceVersion", func(ctx SpecContext) {
		w := newSpecWorld()
		ns := w.namespace("")
		list := mustDo(w, http.MethodGet, w.eventPath(ns, ""), nil, "")
		Expect(list.code).To(Equal(http.StatusOK), list.String())
		rv, _ := getPath(list.obj, "metadata.resourceVersion")

		client, err := specTarget.APIServer()
		Expect(err).NotTo(HaveOccurred())
		streaming := &http.Client{Transport: client.Transport}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(wctx, http.MethodGet,
			specTarget.URL(w.eventPath(ns, "")+fmt.Sprintf("?watch=true&resourceVersion=%v", rv)), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+specTarget.Profile.APIServer.Token)
		resp, err := streaming.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		Expect(w.eventOp("create", "watched", "")).To(Succeed())
		Expect(w.http.code).To(Equal(http.StatusCreated), w.http.String())
		Expect(w.eventOp("patch", "watched", "")).To(Succeed())
		Expect(w.http.code).To(Equal(http.StatusOK), w.http.String())
		Expect(w.eventOp("delete", "watched", "")).To(Succeed())
		Expect(w.http.code).To(Equal(http.StatusOK), w.http.String())

		dec := json.NewDecoder(resp.Body)
		var seen []string
		for len(seen) < 3 {
			var ev watchEvent
			Expect(dec.Decode(&ev)).To(Succeed(), "watch stream ended after %v", seen)
			if name, _ := getPath(ev.Object, "metadata.name"); name == w.name("watched") {
				seen = append(seen, ev.Type)
			}
		}
		Expect(seen).To(Equal([]string{"ADDED", "MODIFIED", "DELETED"}))
	})
})

var _ = Describe("Paging through a list", ruleLabels("event.op.list.limit-continue"), func() {
	It("returns every event exactly once, from a snapshot taken by the first page", func() {
		w := newSpecWorld()
		ns := w.namespace("other")
		for i := range 5 {
			Expect(w.eventExists(fmt.Sprintf("page-%d", i), "other")).To(Succeed())
		}
		full := mustDo(w, http.MethodGet, w.eventPath(ns, ""), nil, "")
		Expect(full.code).To(Equal(http.StatusOK), full.String())
		want := names(full.obj)

		var got []string
		page := mustDo(w, http.MethodGet, w.eventPath(ns, "")+"?limit=2", nil, "")
		for first := true; ; first = false {
			Expect(page.code).To(Equal(http.StatusOK), page.String())
			Expect(len(names(page.obj))).To(BeNumerically("<=", 2))
			got = append(got, names(page.obj)...)
			if first {
				// Written after the first page: the pages that follow must not show it.
				Expect(w.eventExists("late", "other")).To(Succeed())
			}
			cont, _ := getPath(page.obj, "metadata.continue")
			if cont == nil || cont == "" {
				break
			}
			page = mustDo(w, http.MethodGet, w.eventPath(ns, "")+"?limit=2&continue="+fmt.Sprint(cont), nil, "")
		}
		Expect(got).To(ConsistOf(want))
		Expect(got).NotTo(ContainElement(w.name("late")))
	})
})

var _ = Describe("Concurrent writers", ruleLabels("orch.event.op.concurrent-writers"), func() {
	It("lets exactly one of two updates from the same resourceVersion win; the other gets 409", func() {
		w := newSpecWorld()
		Expect(w.eventExists("contended", "")).To(Succeed())
		current := mustDo(w, http.MethodGet, w.eventPath(w.namespace(""), "contended"), nil, "")
		Expect(current.code).To(Equal(http.StatusOK), current.String())

		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				writer := &World{t: specTarget, creds: "valid", suffix: w.suffix}
				var body map[string]any
				data, _ := json.Marshal(current.obj)
				Expect(json.Unmarshal(data, &body)).To(Succeed())
				body["series"] = map[string]any{"count": 2 + i, "lastObservedTime": time.Now().UTC().Format(microTime)}
				Expect(writer.request(http.MethodPut, w.eventPath(w.namespace(""), "contended"), body, "application/json")).To(Succeed())
				codes[i] = writer.http.code
			}()
		}
		wg.Wait()
		Expect(codes).To(ConsistOf(http.StatusOK, http.StatusConflict))
	})
})

// names lists the metadata.name of a list's items.
func names(list map[string]any) []string {
	items, _ := list["items"].([]any)
	out := []string{}
	for _, it := range items {
		if n, ok := getPath(it, "metadata.name"); ok {
			out = append(out, fmt.Sprint(n))
		}
	}
	return out
}
