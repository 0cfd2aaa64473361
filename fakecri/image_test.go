package fakecri

import (
	"strings"
	"testing"
)

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
