package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/controllers/namespace"
)

// A secret written with stringData is stored with it merged into data, base64 in JSON, typed
// Opaque; invalid keys and changes to an immutable secret are refused with Kubernetes' messages.
func TestSecretsOverHTTP(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"MQ=="},"stringData":{"b":"two"}}`)
	if r.code != http.StatusCreated {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if body := string(r.body); !strings.Contains(body, `"b":"dHdv"`) || strings.Contains(body, `"stringData":`) || !strings.Contains(body, `"type":"Opaque"`) {
		t.Fatalf("stored secret %s: want b base64 in data, no stringData, type Opaque", body)
	}
	got := e.do("GET", "/api/v1/namespaces/default/secrets/s", nil)
	var s corev1.Secret
	if err := json.Unmarshal(got.body, &s); err != nil || string(s.Data["a"]) != "1" || string(s.Data["b"]) != "two" {
		t.Fatalf("get: %v %s", err, got.body)
	}

	st := e.do("POST", "/api/v1/namespaces/default/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad"},"stringData":{"a/b":"x"}}`).expectStatus(t, 422, metav1.StatusReasonInvalid)
	if want := `Secret "bad" is invalid: data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`; st.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", st.Message, want)
	}

	e.do("POST", "/api/v1/namespaces/default/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"frozen"},"immutable":true,"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"e30="}}`)
	st = e.do("PATCH", "/api/v1/namespaces/default/secrets/frozen", `{"stringData":{"x":"y"}}`, "Content-Type", "application/merge-patch+json").expectStatus(t, 422, metav1.StatusReasonInvalid)
	if want := "Secret \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"; st.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", st.Message, want)
	}
	r = e.do("PATCH", "/api/v1/namespaces/default/secrets/frozen", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", "application/merge-patch+json")
	if r.code != http.StatusOK {
		t.Errorf("a label on an immutable secret: %d %s", r.code, r.body)
	}
}

func TestConfigMapsOverHTTP(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}, Immutable: ptrTrue()})
	if r.code != http.StatusCreated {
		t.Fatalf("%d %s", r.code, r.body)
	}
	st := e.do("PATCH", "/api/v1/namespaces/default/configmaps/c", `{"data":{"k":"w"}}`, "Content-Type", "application/merge-patch+json").expectStatus(t, 422, metav1.StatusReasonInvalid)
	if want := "ConfigMap \"c\" is invalid: data: Forbidden: field is immutable when `immutable` is set"; st.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", st.Message, want)
	}
	table := e.do("GET", "/api/v1/namespaces/default/configmaps", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if !strings.Contains(string(table.body), `"name":"Data"`) || !strings.Contains(string(table.body), `"cells":["c",1,`) {
		t.Errorf("table: %s", table.body)
	}
	// The namespace controller deletes them with their namespace.
	e.do("POST", "/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
	e.do("POST", "/api/v1/namespaces/gone/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	e.do("POST", "/api/v1/namespaces/gone/secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}})
	e.do("DELETE", "/api/v1/namespaces/gone", nil).namespace(t)
	eventually(t, func() bool {
		e.clock.Add(namespace.SweepInterval)
		return e.do("GET", "/api/v1/namespaces/gone/configmaps/c", nil).code == 404 &&
			e.do("GET", "/api/v1/namespaces/gone/secrets/s", nil).code == 404 &&
			e.do("GET", "/api/v1/namespaces/gone", nil).code == 404
	})
}

func ptrTrue() *bool { t := true; return &t }

// A node reads the configmaps and secrets of the pods bound to it, one by name, and no others.
func TestNodeReadsObjectsOfItsPods(t *testing.T) {
	e := nodeEnv(t, "Node")
	registerNode(t, e, "node-a")
	registerNode(t, e, "node-b")
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/secrets"} {
		for _, name := range []string{"mine", "other", "unused"} {
			var body any = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if strings.HasSuffix(path, "secrets") {
				body = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}
			}
			if r := e.do("POST", path, body, as("admin")...); r.code != http.StatusCreated {
				t.Fatalf("%d %s", r.code, r.body)
			}
		}
	}
	pod := func(name, node, obj string) *corev1.Pod {
		return podBody(name, func(p *corev1.Pod) {
			p.Spec.NodeName = node
			p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: obj}}}}}
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: obj}, Key: "k"}}}}
		})
	}
	for _, p := range []*corev1.Pod{pod("a", "node-a", "mine"), pod("b", "node-b", "other")} {
		if r := e.do("POST", "/api/v1/namespaces/default/pods", p, as("admin")...); r.code != http.StatusCreated {
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	for _, tc := range []struct {
		name, path string
		want       int
		message    string
	}{
		{"its pod's configmap", "/api/v1/namespaces/default/configmaps/mine", 200, ""},
		{"its pod's secret", "/api/v1/namespaces/default/secrets/mine", 200, ""},
		{"a list of its pod's secret by name", "/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dmine", 200, ""},
		{"another node's pod's secret", "/api/v1/namespaces/default/secrets/other", 403,
			`secrets "other" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'node-a' and this object`},
		{"a configmap of no pod", "/api/v1/namespaces/default/configmaps/unused", 403, ""},
		{"a list of secrets", "/api/v1/namespaces/default/secrets", 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", tc.path, nil, as("node-a")...)
			if tc.want == 200 {
				if r.code != 200 {
					t.Fatalf("%d %s", r.code, r.body)
				}
				return
			}
			st := r.expectStatus(t, 403, metav1.StatusReasonForbidden)
			if tc.message != "" && st.Message != tc.message {
				t.Errorf("message\n  %s\nwant\n  %s", st.Message, tc.message)
			}
		})
	}
}
