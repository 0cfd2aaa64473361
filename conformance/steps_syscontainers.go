package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// systemContainerSteps read the running agent's stats summary, as a monitoring agent reads it.
func systemContainerSteps() []StepDef {
	return []StepDef{
		{`^the agent's stats summary has the system containers "([^"]*)"$`, func(w *World) any { return w.summarySystemContainers }},
	}
}

// summarySystemContainers wants each named system container (comma-separated) in
// /stats/summary's node.systemContainers, with its CPU time and memory usage.
func (w *World) summarySystemContainers(names string) error {
	return eventually(settle, func() error {
		server := "read-only"
		if w.node().ports[server] == 0 {
			server = "HTTPS"
		}
		code, body, err := w.serverRequest(server, http.MethodGet, "/stats/summary")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("GET /stats/summary on the %s server: %d %s", server, code, body)
		}
		var summary struct {
			Node struct {
				SystemContainers []struct {
					Name string `json:"name"`
					CPU  *struct {
						UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
					} `json:"cpu"`
					Memory *struct {
						UsageBytes *uint64 `json:"usageBytes"`
					} `json:"memory"`
				} `json:"systemContainers"`
			} `json:"node"`
		}
		if err := json.Unmarshal(body, &summary); err != nil {
			return fmt.Errorf("decoding /stats/summary: %w", err)
		}
		for _, name := range strings.Split(names, ",") {
			found := false
			for _, c := range summary.Node.SystemContainers {
				if c.Name != name {
					continue
				}
				if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil || c.Memory == nil || c.Memory.UsageBytes == nil {
					return fmt.Errorf("system container %s without its CPU time or memory usage: %s", name, body)
				}
				found = true
			}
			if !found {
				return fmt.Errorf("/stats/summary's system containers lack %q: %s", name, body)
			}
		}
		return nil
	})
}
