package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// webhookKubeconfig is the connection file a valid webhook authorizer points at.
const webhookKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster:
    server: https://authz.example.com/authorize
users:
- name: api-server
  user:
    token: conformance
contexts:
- name: webhook
  context:
    cluster: webhook
    user: api-server
current-context: webhook
`

// validConfig returns, per kind, a small valid document: the scenarios change one thing in it and
// expect exactly that change to be accepted or refused. {dir} is the scenario's directory.
func validConfig(kind string) (map[string]any, error) {
	var doc string
	switch kind {
	case "AuthenticationConfiguration":
		doc = `{"jwt": [{"issuer": {"url": "https://issuer.example.com", "audiences": ["my-app"]},
			"claimMappings": {"username": {"claim": "sub", "prefix": ""}}}]}`
	case "AuthorizationConfiguration":
		doc = `{"authorizers": [{"type": "Webhook", "name": "webhook", "webhook": {
			"timeout": "3s", "subjectAccessReviewVersion": "v1", "matchConditionSubjectAccessReviewVersion": "v1",
			"failurePolicy": "Deny", "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": "{dir}/webhook.kubeconfig"},
			"matchConditions": []}}]}`
	case "EncryptionConfiguration":
		doc = `{"resources": [{"resources": ["secrets"], "providers": [
			{"aescbc": {"keys": [{"name": "key1", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}},
			{"identity": {}}]}]}`
	case "AdmissionConfiguration":
		doc = `{"plugins": [{"name": "EventRateLimit", "configuration": {"limits": [{"type": "Server", "qps": 50, "burst": 100}]}}]}`
	case "TracingConfiguration":
		doc = `{"endpoint": "localhost:4317", "samplingRatePerMillion": 100}`
	default:
		return nil, fmt.Errorf("no valid document for kind %q", kind)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		return nil, err
	}
	m["kind"] = kind
	return m, nil
}

func configSteps() []StepDef {
	return []StepDef{
		{`^a valid (\w+) file$`, func(w *World) any { return w.validFile }},
		{`^a configuration file:$`, func(w *World) any { return w.rawFile }},
		{`^its "([^"]*)" is set to (.+)$`, func(w *World) any { return w.docSet }},
		{`^its "([^"]*)" is removed$`, func(w *World) any { return w.docRemove }},
		{`^its "([^"]*)" holds (\d+) copies of (.+), numbered$`, func(w *World) any { return w.docCopies }},
		{`^the configuration is checked$`, func(w *World) any { return w.checkConfig }},
		{`^it is accepted$`, func(w *World) any { return w.accepted }},
		{`^it is refused at "([^"]*)"$`, func(w *World) any { return w.refusedAt }},
		{`^it is refused$`, func(w *World) any { return w.refused }},
		{`^it is refused mentioning "([^"]*)"$`, func(w *World) any { return w.refusedMentioning }},
	}
}

func (w *World) validFile(kind string) error {
	doc, err := validConfig(kind)
	if err != nil {
		return err
	}
	if doc["apiVersion"], err = w.t.Profile.ConfigAPIVersion(); err != nil {
		return err
	}
	w.doc = doc
	return os.WriteFile(filepath.Join(w.dir, "webhook.kubeconfig"), []byte(webhookKubeconfig), 0o600)
}

func (w *World) rawFile(content string) error {
	v, err := w.t.Profile.ConfigAPIVersion()
	w.docRaw = strings.ReplaceAll(content, "{apiVersion}", v)
	return err
}

func (w *World) needDoc() error {
	if w.doc == nil {
		return fmt.Errorf("no configuration document: start with \"a valid <Kind> file\"")
	}
	return nil
}

func (w *World) docSet(path, value string) error {
	if err := w.needDoc(); err != nil {
		return err
	}
	v, err := parseValue(value)
	if err != nil {
		return err
	}
	return setPath(w.doc, path, v)
}

func (w *World) docRemove(path string) error {
	if err := w.needDoc(); err != nil {
		return err
	}
	removePath(w.doc, path)
	return nil
}

// docCopies fills a list with n copies of a value, "%d" in it replaced by the copy's number, so the
// copies differ.
func (w *World) docCopies(path string, n int, value string) error {
	if err := w.needDoc(); err != nil {
		return err
	}
	list := make([]any, n)
	for i := range list {
		v, err := parseValue(strings.ReplaceAll(value, "%d", fmt.Sprint(i)))
		if err != nil {
			return err
		}
		list[i] = v
	}
	return setPath(w.doc, path, list)
}

// writeConfig writes the scenario's configuration document to a file and returns its name.
func (w *World) writeConfig() (string, error) {
	content := w.docRaw
	if w.doc != nil {
		data, err := json.MarshalIndent(w.doc, "", "  ")
		if err != nil {
			return "", err
		}
		content = strings.ReplaceAll(string(data), "{dir}", w.dir)
		if w.collector != nil {
			content = strings.ReplaceAll(content, "{collector}", w.collector.Endpoint())
		}
		for name, p := range w.providers {
			content = strings.ReplaceAll(content, "{issuer:"+name+"}", p.srv.URL)
		}
	}
	file := filepath.Join(w.dir, "config.yaml")
	return file, os.WriteFile(file, []byte(content), 0o600)
}

func (w *World) checkConfig() error {
	file, err := w.writeConfig()
	if err != nil {
		return err
	}
	r, err := w.t.Run(w.dir, w.t.Profile.ConfigCheck.Command, file)
	given, _ := os.ReadFile(file)
	r.Given = string(given)
	w.result = &r
	return err
}

func (w *World) needResult() error {
	if w.result == nil {
		return fmt.Errorf("nothing was run")
	}
	return nil
}

func (w *World) accepted() error {
	if err := w.needResult(); err != nil {
		return err
	}
	if w.result.Code != 0 {
		return fmt.Errorf("want it accepted, exit %d:\n%s", w.result.Code, w.result.Report())
	}
	return nil
}

func (w *World) refused() error {
	if err := w.needResult(); err != nil {
		return err
	}
	if w.result.Code != 1 {
		return fmt.Errorf("want it refused with exit 1, exit %d:\n%s", w.result.Code, w.result.Report())
	}
	return nil
}

// refusedMentioning wants exit 1 and the text somewhere in the output, for problems that are not
// about one field path (decoding errors, for example).
func (w *World) refusedMentioning(text string) error {
	if err := w.refused(); err != nil {
		return err
	}
	if !strings.Contains(w.result.Output(), text) {
		return fmt.Errorf("want %q in the output:\n%s", text, w.result.Report())
	}
	return nil
}

// refusedAt wants exit 1 and a problem line "... <path>: <reason>" naming the field.
func (w *World) refusedAt(path string) error {
	if err := w.refused(); err != nil {
		return err
	}
	for _, line := range strings.Split(w.result.Output(), "\n") {
		if strings.Contains(line, " "+path+": ") || strings.HasPrefix(line, path+": ") {
			return nil
		}
	}
	return fmt.Errorf("want a problem at %s:\n%s", path, w.result.Report())
}
