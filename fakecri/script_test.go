package fakecri

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExampleScript(t *testing.T) {
	s, err := LoadScript("examples/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 42 || s.Node.RuntimeName != "containerd" || len(s.Images) != 4 || len(s.Containers) != 6 ||
		len(s.Exec) != 3 || len(s.Faults) != 4 {
		t.Fatalf("%+v", s)
	}
	if s.Images[0].PullDuration.D() != 12*time.Second || s.Images[0].Size.Value() != 70*mi {
		t.Fatalf("%+v", s.Images[0])
	}
	if s.Node.ImageFs.Capacity.Value() != 20*gi {
		t.Fatal("capacity")
	}
	m := s.Containers[1].Usage.Memory
	if m.Ramp == nil || m.Ramp.PerSecond.Value() != 2*mi {
		t.Fatalf("%+v", m)
	}
	if s.Containers[5].Usage.PIDs.Constant.Value() != 12 || len(s.Containers[5].Usage.Disk.Steps) != 3 {
		t.Fatal("shorthand curves")
	}
	// renders and reads back the same
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ParseScript(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(s2)
	if string(a) != string(b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	if _, err := New(Options{Script: s}); err != nil {
		t.Fatal(err)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, bad := range []string{
		"nodes: {}",                                // unknown field
		"images: [{size: 1Gi}]",                    // match missing
		"images: [{match: x, size: lots}]",         // bad quantity
		"images: [{match: x, pullDuration: soon}]", // bad duration
		"images: [{match: x, digest: sha256:abc}]", // bad digest
		"faults: [{method: Nope, latency: 1s}]",    // no such method
		"faults: [{method: Status, error: {code: Teapot}}]",
		"faults: [{method: Status, probability: 2, error: {code: Internal}}]",
		"faults: [{method: Status, hang: true, error: {code: Internal}}]",
		"node: {cgroupDriver: openrc}",
		"node: {podCIDR: 10.0.0.0/31}",
		"node: {containerFs: tmpfs}",
		"node: {imageFs: {capacity: 1Gi, used: 2Gi}}",
		"containers: [{match: {name: x}, usage: {memory: {ramp: {from: 1Mi}}}}]",
		"containers: [{match: {name: x}, usage: {cpu: {constant: 1, steps: [{at: 0s, value: 1}]}}}]",
		"containers: [{match: {name: x}, exit: {after: -1s}}]",
	} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if s, err := ParseScript(nil); err != nil || !reflect.DeepEqual(s, &Script{}) {
		t.Fatal(s, err)
	}
}

func TestParseImageRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                       "docker.io/library/busybox:latest",
		"library/busybox:1.36":                          "docker.io/library/busybox:1.36",
		"docker.io/nginx":                               "docker.io/library/nginx:latest",
		"index.docker.io/acme/app:v2":                   "docker.io/acme/app:v2",
		"registry.k8s.io/pause:3.10":                    "registry.k8s.io/pause:3.10",
		"localhost:5000/x/y":                            "localhost:5000/x/y:latest",
		"quay.io/a/b@sha256:" + strings.Repeat("0", 64): "quay.io/a/b@sha256:" + strings.Repeat("0", 64),
	} {
		r, err := parseImageRef(in)
		if err != nil || r.String() != want {
			t.Errorf("%s: %v %v", in, r, err)
		}
	}
	for _, bad := range []string{"", "UPPER/case", "a b", "x@sha256:12", "x:bad:tag:"} {
		if _, err := parseImageRef(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
