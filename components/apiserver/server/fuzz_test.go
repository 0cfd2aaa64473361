package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// fuzzCollections are the collections the fuzz targets write and list: every kind the server
// stores that a client creates, under orch's group names and one under Kubernetes'.
var fuzzCollections = []string{
	"/apis/events.orch.io/v1/namespaces/default/events",
	"/api/v1/namespaces",
	"/api/v1/nodes",
	"/api/v1/namespaces/default/pods",
	"/api/v1/namespaces/default/configmaps",
	"/api/v1/namespaces/default/secrets",
	"/api/v1/namespaces/default/serviceaccounts",
	"/apis/coordination.orch.io/v1/namespaces/default/leases",
	"/apis/certificates.orch.io/v1/certificatesigningrequests",
	"/apis/rbac.authorization.orch.io/v1/namespaces/default/roles",
	"/apis/rbac.authorization.orch.io/v1/clusterroles",
	"/apis/rbac.authorization.orch.io/v1/namespaces/default/rolebindings",
	"/apis/rbac.authorization.orch.io/v1/clusterrolebindings",
	"/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
	"/apis/authorization.orch.io/v1/namespaces/default/localsubjectaccessreviews",
	"/apis/authorization.orch.io/v1/selfsubjectaccessreviews",
	"/apis/authorization.orch.io/v1/selfsubjectrulesreviews",
	"/apis/authorization.orch.io/v1/subjectaccessreviews",
	"/apis/authentication.orch.io/v1/selfsubjectreviews",
	"/apis/authentication.orch.io/v1/tokenreviews",
}

var fuzzContentTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/vnd.orch.protobuf"}

// fuzzServer serves the API over memory storage to every fuzz input of one target, as an
// administrator: what the fuzzer reaches is decoding, validation, admission and storage.
func fuzzServer(f *testing.F) (*http.Client, string) {
	srv, _, _ := startServer(f, func(c *Config) {
		c.Authenticator = authn.Union(authn.Anonymous())
		c.Authorizer = authz.AlwaysAllow()
	})
	return srv.Client(), srv.URL
}

// checkAnswer holds an answer to what hostile input may get: a client error or success, with a
// JSON body, never a server error (a panic recovered is a 500). Finds kept as seeds under testdata:
// a list at a resourceVersion ahead of the store (504 ResourceVersionTooLarge, as in Kubernetes).
func checkAnswer(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", what, err)
	}
	// 504 for a resourceVersion ahead of the store is Kubernetes' answer, a client's to retry.
	tooLarge := resp.StatusCode == http.StatusGatewayTimeout && bytes.Contains(body, []byte(`"ResourceVersionTooLarge"`))
	if resp.StatusCode >= 500 && !tooLarge {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
	}
	if !json.Valid(body) {
		t.Fatalf("%s: %d, the answer is not JSON: %q", what, resp.StatusCode, body)
	}
}

// FuzzCreateBodies posts hostile bodies, as JSON, YAML or protobuf, to every collection.
func FuzzCreateBodies(f *testing.F) {
	for i, body := range []string{
		`{"apiVersion":"events.orch.io/v1","kind":"Event","metadata":{"name":"e"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"c","reportingInstance":"i","action":"a","reason":"r","type":"Normal","regarding":{"kind":"Pod","name":"p"}}`,
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}}`,
		`{"apiVersion":"coordination.orch.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"h","leaseDurationSeconds":40}}`,
		`{"apiVersion":"certificates.orch.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"request":"","signerName":"orch.io/orch-apiserver-client","usages":["client auth"]}}`,
		`{"apiVersion":"rbac.authorization.orch.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
		`{"apiVersion":"rbac.authorization.orch.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"aggregationRule":{"clusterRoleSelectors":[{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]}]}}`,
		`{"apiVersion":"rbac.authorization.orch.io/v1","kind":"RoleBinding","metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.orch.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]}`,
		`{"apiVersion":"rbac.authorization.orch.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.orch.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"u"}]}`,
		`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: y}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]`,
		`{"apiVersion":"authorization.orch.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`,
		`{"apiVersion":"authorization.orch.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}`,
		`{"apiVersion":"authorization.orch.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","nonResourceAttributes":{"verb":"get","path":"/"}}}`,
		`{"apiVersion":"authentication.orch.io/v1","kind":"TokenReview","spec":{"token":"t"}}`,
	} {
		f.Add(uint8(i), uint8(0), []byte(body))
		f.Add(uint8(i), uint8(1), []byte(body))
	}
	f.Add(uint8(3), uint8(2), []byte("k8s\x00\x0a\x0b\x0a\x02v1\x12\x03Pod"))
	client, base := fuzzServer(f)
	f.Fuzz(func(t *testing.T, collection, contentType uint8, body []byte) {
		path := fuzzCollections[int(collection)%len(fuzzCollections)]
		req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", fuzzContentTypes[int(contentType)%len(fuzzContentTypes)])
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, resp, "POST "+path)
	})
}

// FuzzListQueries lists every collection with hostile query parameters: label and field
// selectors, limits, continue tokens, resource versions (never a watch, which would not end).
func FuzzListQueries(f *testing.F) {
	for i, q := range []string{
		"labelSelector=app%3Dweb,tier+notin+(a,b),!x&fieldSelector=metadata.name%3Dx",
		"limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi94In0",
		"resourceVersion=0&resourceVersionMatch=NotOlderThan",
		"resourceVersion=18446744073709551617&resourceVersionMatch=Exact&limit=-1",
		"fieldSelector=spec.nodeName%21%3D&labelSelector=a+in+()",
		"continue=%00&limit=99999999999999999999",
	} {
		f.Add(uint8(i), q)
	}
	client, base := fuzzServer(f)
	f.Fuzz(func(t *testing.T, collection uint8, query string) {
		q, _ := url.ParseQuery(query)
		q.Del("watch")
		path := fuzzCollections[int(collection)%len(fuzzCollections)]
		resp, err := client.Get(base + path + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, resp, "GET "+path+"?"+q.Encode())
	})
}
