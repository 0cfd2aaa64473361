package core

import (
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerOf(t *testing.T) {
	pod := func(containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		return p
	}
	withInit := pod("app", "sidecar")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	withInit.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
	for _, tc := range []struct {
		pod        *corev1.Pod
		name, want string
		err        string
	}{
		{pod("app"), "", "app", ""},
		{pod("app"), "app", "app", ""},
		{withInit, "setup", "setup", ""},
		{withInit, "debugger", "debugger", ""},
		{withInit, "", "", "a container name must be specified for pod web, choose one of: [app sidecar] or one of the init containers: [setup]"},
		{pod("app"), "db", "", "container db is not valid for pod web"},
	} {
		got, err := containerOf(tc.pod, tc.name)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("containerOf(%q) = %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestPodLogOptionsFromTheQuery(t *testing.T) {
	o, err := podLogOptions(url.Values{"container": {"app"}, "follow": {"true"}, "previous": {"1"}, "timestamps": {"false"},
		"sinceTime": {"2026-01-02T03:04:05Z"}, "tailLines": {"10"}, "limitBytes": {"512"}, "stream": {"Stdout"}})
	if err != nil || o.Container != "app" || !o.Follow || !o.Previous || o.Timestamps || o.SinceTime.UTC().Hour() != 3 ||
		*o.TailLines != 10 || *o.LimitBytes != 512 || *o.Stream != "Stdout" || o.SinceSeconds != nil {
		t.Fatalf("options %+v, %v", o, err)
	}
	if _, err := podLogOptions(url.Values{"tailLines": {"ten"}}); err == nil || !strings.Contains(err.Error(), "tailLines") {
		t.Errorf("tailLines=ten: %v", err)
	}
	if o, _ := podPortForwardOptions(url.Values{"ports": {"80", "8080"}}); len(o.Ports) != 2 || o.Ports[1] != 8080 {
		t.Errorf("ports: %+v", o)
	}
	if e := podExecOptions(url.Values{"command": {"ls", "-l"}, "stdin": {"true"}, "tty": {"1"}}); len(e.Command) != 2 || !e.Stdin || e.Stdout || !e.TTY {
		t.Errorf("exec options: %+v", e)
	}
}

func TestValidatePodLogOptions(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	for _, tc := range []struct {
		opts corev1.PodLogOptions
		want string
	}{
		{corev1.PodLogOptions{TailLines: i64(0), LimitBytes: i64(1), SinceSeconds: i64(1)}, ""},
		{corev1.PodLogOptions{TailLines: i64(-1)}, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{corev1.PodLogOptions{LimitBytes: i64(0)}, "limitBytes: Invalid value: 0: must be greater than 0"},
		{corev1.PodLogOptions{SinceSeconds: i64(0)}, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{corev1.PodLogOptions{SinceSeconds: i64(5), SinceTime: &metav1.Time{}}, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{corev1.PodLogOptions{Stream: str("stdin")}, `stream: Unsupported value: "stdin"`},
		{corev1.PodLogOptions{Stream: str("Stderr"), TailLines: i64(3)}, "`tailLines` and specific `stream` are mutually exclusive for now"},
		{corev1.PodLogOptions{Stream: str("All"), TailLines: i64(3)}, ""},
	} {
		errs := validatePodLogOptions(&tc.opts)
		if got := errs.ToAggregate(); (got == nil) != (tc.want == "") || (got != nil && !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.opts, got, tc.want)
		}
	}
}
