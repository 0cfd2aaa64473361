package eventsapi

import (
	"strings"
	"testing"
)

// A request of orch's events group, path or body, is the same bytes on Kubernetes' group but for
// its name; "" leaves it orch's.
func TestOnGroup(t *testing.T) {
	for _, c := range []struct{ in, group, want string }{
		{Path, "", "/apis/events.orch.io/v1/namespaces/default/events"},
		{Path, KubeGroup, "/apis/events.k8s.io/v1/namespaces/default/events"},
		{Path + "?watch=true&resourceVersion=7", KubeGroup, "/apis/events.k8s.io/v1/namespaces/default/events?watch=true&resourceVersion=7"},
		{string(JSON("a", "b", "c")), KubeGroup, strings.Replace(string(JSON("a", "b", "c")), `"apiVersion":"events.orch.io/v1"`, `"apiVersion":"events.k8s.io/v1"`, 1)},
		{"/readyz", KubeGroup, "/readyz"},
	} {
		if got := OnGroup(c.in, c.group); got != c.want {
			t.Errorf("OnGroup(%q, %q) = %q, want %q", c.in, c.group, got, c.want)
		}
	}
}
