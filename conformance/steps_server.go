package conformance

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func serverSteps() []StepDef {
	return []StepDef{
		{`^the API server is started with "([^"]*)"$`, func(w *World) any { return w.startServer }},
		{`^the API server refuses to start naming "([^"]*)"$`, func(w *World) any { return w.serverRefuses }},
		{`^an anonymous request to "([^"]*)" is (answered|refused)$`, func(w *World) any { return w.anonymousRequest }},
		{`^the event "([^"]*)" is gone within (\d+) seconds$`, func(w *World) any { return w.eventGoneWithin }},
	}
}

// startServer starts an API server of the scenario's own, with args; {config} stands for the
// configuration file the scenario built. The server stops when the scenario ends.
func (w *World) startServer(args string) error {
	if w.doc != nil {
		file, err := w.writeConfig()
		if err != nil {
			return err
		}
		args = strings.ReplaceAll(args, "{config}", file)
	}
	args = strings.NewReplacer("{dir}", w.dir, "{etcd}", w.etcdURL).Replace(args)
	work := filepath.Join(w.dir, "server")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	s, failed, _, err := w.t.StartOnFreePort(work, strings.Fields(args))
	w.server, w.result, w.serverExited = s, failed, failed != nil
	return err
}

func (w *World) serverRefuses(text string) error {
	if w.server != nil {
		return fmt.Errorf("want the API server to refuse to start; it is running")
	}
	if err := w.needResult(); err != nil {
		return err
	}
	if w.result.Code == 0 || !strings.Contains(w.result.Output(), text) {
		return fmt.Errorf("want a non-zero exit naming %q, got %d:\n%s", text, w.result.Code, w.result.Output())
	}
	return nil
}

func (w *World) anonymousRequest(path, outcome string) error {
	if w.server == nil {
		return fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	resp, err := w.server.Client.Get(w.server.BaseURL + path)
	if err != nil {
		return err
	}
	body, _ := drain(resp.Body)
	if refused := resp.StatusCode == http.StatusUnauthorized; refused != (outcome == "refused") {
		return fmt.Errorf("anonymous GET %s: want it %s, got %d: %s", path, outcome, resp.StatusCode, body)
	}
	return nil
}

// eventGoneWithin polls on the real clock, the server under test keeping its own time, until the
// event answers 404.
func (w *World) eventGoneWithin(logical string, seconds int) error {
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		err := w.eventPresence(logical, "does not exist", "")
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
