package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// ListJSON splices stored bytes; for every resource it must answer exactly the bytes of encoding
// List's answer. Pods carry metadata.generation, which comes before creationTimestamp: the
// resourceVersion must be spliced before it.
func TestListJSONEqualsEncodedList(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC))
	st := memory.New(clk)
	for _, tc := range []struct {
		strategy generic.Strategy
		object   func(i int) runtime.Object
	}{
		{PodStrategy{}, func(i int) runtime.Object {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": []string{"web", "db"}[i%2]}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}
		}},
		{NamespaceStrategy{}, func(i int) runtime.Object {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i), Labels: map[string]string{"app": []string{"web", "db"}[i%2]}}}
		}},
	} {
		s := generic.New(generic.Options{Strategy: tc.strategy, Storage: st, Clock: clk})
		namespace := ""
		if tc.strategy.NamespaceScoped() {
			namespace = "default"
		}
		for i := 0; i < 5; i++ {
			if _, err := s.Create(ctx, namespace, tc.object(i), false); err != nil {
				t.Fatal(err)
			}
		}
		for name, o := range map[string]generic.ListOptions{
			"everything":       {},
			"a page":           {Limit: 2},
			"a label selector": {Labels: labels.SelectorFromSet(labels.Set{"app": "web"})},
		} {
			t.Run(tc.strategy.Kind()+"/"+name, func(t *testing.T) {
				list, err := s.List(ctx, namespace, o)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(list)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.ListJSON(ctx, namespace, o)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("ListJSON:\n%s\nwant (encoded List):\n%s", got, want)
				}
			})
		}
	}
}
