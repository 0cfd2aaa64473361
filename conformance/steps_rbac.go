package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
)

// rbacSteps speak to a server of the scenario's own as its users (a token file's, and the
// administrator), so what RBAC grants each of them can be seen in the answers.
func rbacSteps() []StepDef {
	return []StepDef{
		{`^(the administrator|"[^"]*") sends (GET|DELETE) "([^"]*)"$`, func(w *World) any { return w.sendAs }},
		{`^(the administrator|"[^"]*") sends (POST|PUT) "([^"]*)" with:$`, func(w *World) any { return w.sendBodyAs }},
		{`^they are answered (\d+)$`, func(w *World) any { return w.rbacAnswerIs }},
		{`^the answer's text contains "([^"]*)"$`, func(w *World) any { return w.rbacAnswerContains }},
		{`^the answer's text does not contain "([^"]*)"$`, func(w *World) any { return w.rbacAnswerLacks }},
		{`^within (\d+) seconds "([^"]*)" is answered (\d+) to GET "([^"]*)"$`, func(w *World) any { return w.answeredWithin }},
		{`^within (\d+) seconds the cluster role "([^"]*)" has a rule on "([^"]*)"$`, func(w *World) any { return w.clusterRoleGathers }},
		{`^the review's answer is "(allowed|not allowed)"$`, func(w *World) any { return w.reviewAnswerIs }},
		{`^the review's user is "([^"]*)" with uid "([^"]*)" in the group "([^"]*)"$`, func(w *World) any { return w.reviewUserIs }},
		{`^asked by a SelfSubjectAccessReview, "([^"]*)" may (\w+) "([^"]*)": (yes|no)$`, func(w *World) any { return w.selfReview }},
	}
}

// rbacAnswer is the last answer a user was given.
type rbacAnswer struct {
	code int
	body string
}

// groupPath fills a path's placeholders with the target's spelling of the group names: {rbac}
// (rbac.authorization.orch.io or Kubernetes' rbac.authorization.k8s.io), {authz} (authorization.*),
// {authn} (authentication.*) and {ns}, the suite's first namespace.
func (w *World) groupPath(path string) string {
	domain := strings.TrimPrefix(w.t.Profile.APIServer.Group, "events.")
	return strings.NewReplacer("{rbac}", "rbac.authorization."+domain, "{authz}", "authorization."+domain,
		"{authn}", "authentication."+domain, "{ns}", w.t.Profile.APIServer.Namespaces[0]).Replace(path)
}

func (w *World) tokenOf(who string) string {
	if who == "the administrator" {
		return w.t.Profile.APIServer.Token
	}
	return userToken(strings.Trim(who, `"`))
}

func (w *World) sendAs(who, method, path string) error { return w.send(who, method, path, "") }

func (w *World) sendBodyAs(who, method, path string, doc *godog.DocString) error {
	return w.send(who, method, path, doc.Content)
}

func (w *World) send(who, method, path, body string) error {
	code, out, err := w.requestAs(w.tokenOf(who), method, w.groupPath(path), w.groupPath(body))
	w.rbac = &rbacAnswer{code: code, body: string(out)}
	return err
}

func (w *World) requestAs(token, method, path, body string) (int, []byte, error) {
	if w.server == nil {
		return 0, nil, fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	req, err := http.NewRequest(method, w.server.BaseURL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := w.server.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	out, err := drain(resp.Body)
	return resp.StatusCode, out, err
}

func (w *World) rbacAnswerIs(code int) error {
	if w.rbac == nil || w.rbac.code != code {
		return fmt.Errorf("want %d, got %+v", code, w.rbac)
	}
	return nil
}

func (w *World) rbacAnswerContains(text string) error {
	if w.rbac == nil || !strings.Contains(w.rbac.body, w.groupPath(text)) {
		return fmt.Errorf("want an answer containing %q, got %+v", w.groupPath(text), w.rbac)
	}
	return nil
}

func (w *World) rbacAnswerLacks(text string) error {
	if w.rbac == nil || strings.Contains(w.rbac.body, w.groupPath(text)) {
		return fmt.Errorf("want an answer without %q, got %+v", w.groupPath(text), w.rbac)
	}
	return nil
}

// answeredWithin polls: a server's authorizer follows its roles and bindings as they are written,
// not in the write itself, in Kubernetes as in orch.
func (w *World) answeredWithin(seconds int, who string, code int, path string) error {
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		got, body, err := w.requestAs(w.tokenOf(`"`+who+`"`), http.MethodGet, w.groupPath(path), "")
		if err == nil && got == code {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s GET %s: want %d within %ds, got %d %s (%v)", who, w.groupPath(path), code, seconds, got, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// selfReview asks, as who, whether they may verb resource (with its subresource after a slash) named
// "p" in the suite's first namespace.
func (w *World) selfReview(who, verb, resource, want string) error {
	res, sub, _ := strings.Cut(resource, "/")
	body := fmt.Sprintf(`{"apiVersion":"{authz}/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":`+
		`{"namespace":"{ns}","verb":%q,"resource":%q,"subresource":%q,"name":"p"}}}`, verb, res, sub)
	code, out, err := w.requestAs(w.tokenOf(`"`+who+`"`), http.MethodPost, w.groupPath("/apis/{authz}/v1/selfsubjectaccessreviews"), w.groupPath(body))
	if err != nil {
		return err
	}
	var review struct {
		Status struct{ Allowed bool } `json:"status"`
	}
	if code != http.StatusCreated || json.Unmarshal(out, &review) != nil {
		return fmt.Errorf("SelfSubjectAccessReview: %d %s", code, out)
	}
	if review.Status.Allowed != (want == "yes") {
		return fmt.Errorf("%s may %s %s: want %s, got %s", who, verb, resource, want, out)
	}
	return nil
}

// clusterRoleGathers polls a cluster role until one of its rules names resource: the aggregation
// controller writes it after the roles it gathers change.
func (w *World) clusterRoleGathers(seconds int, role, resource string) error {
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		code, out, err := w.requestAs(w.t.Profile.APIServer.Token, http.MethodGet, w.groupPath("/apis/{rbac}/v1/clusterroles/"+role), "")
		if err == nil && code == http.StatusOK && strings.Contains(string(out), `"`+resource+`"`) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster role %s: no rule on %s within %ds: %d %s (%v)", role, resource, seconds, code, out, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// reviewAnswerIs reads the last answer as an access review's: allowed or not.
func (w *World) reviewAnswerIs(want string) error {
	var review struct {
		Status struct{ Allowed bool } `json:"status"`
	}
	if w.rbac == nil || json.Unmarshal([]byte(w.rbac.body), &review) != nil {
		return fmt.Errorf("want an access review, got %+v", w.rbac)
	}
	if review.Status.Allowed != (want == "allowed") {
		return fmt.Errorf("want %s, got %s", want, w.rbac.body)
	}
	return nil
}

// reviewUserIs reads the last answer as a SelfSubjectReview's: the user the server took the caller for.
func (w *World) reviewUserIs(name, uid, group string) error {
	var review struct {
		Status struct {
			UserInfo struct {
				Username, UID string
				Groups        []string
			} `json:"userInfo"`
		} `json:"status"`
	}
	if w.rbac == nil || json.Unmarshal([]byte(w.rbac.body), &review) != nil {
		return fmt.Errorf("want a SelfSubjectReview, got %+v", w.rbac)
	}
	u := review.Status.UserInfo
	if u.Username != name || u.UID != uid || !slices.Contains(u.Groups, group) {
		return fmt.Errorf("want %s (uid %s) in %s, got %s", name, uid, group, w.rbac.body)
	}
	return nil
}
